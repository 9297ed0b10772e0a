//go:build !oncall

package main

import (
	"regexp"
	"strings"
	"testing"
)

// usageSection is the section of docs/usage-providers.md on usage at the door.
const usageSection = "## Usage at the door"

// TestUsagePageRuns: the usage section of docs/usage-providers.md runs as it
// stands: the variables its shell block exports configure `hookline run`
// (a CloudEvents source beside the template's two), and each command of
// its console block prints the lines the page shows.
func TestUsagePageRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole local system")
	}
	text := doc(t, "docs/usage-providers.md")
	start := strings.Index(text, "\n"+usageSection+"\n")
	if start < 0 {
		t.Fatalf("docs/usage-providers.md has no %q section", usageSection)
	}
	section := text[start+1:]
	if end := strings.Index(section[len(usageSection):], "\n## "); end >= 0 {
		section = section[:len(usageSection)+end]
	}
	// given the variables the page exports
	sh := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(section)
	if sh == nil || !strings.Contains(sh[1], "go run ./cmd/hookline run") {
		t.Fatal("the usage section has no shell block that starts hookline run")
	}
	exports := regexp.MustCompile(`(?ms)^export (\w+)=(?:'(.*?)'|(\S+))$`).FindAllStringSubmatch(sh[1], -1)
	if len(exports) < 3 {
		t.Fatalf("the usage section exports %d variables, want its sources, mappings and secret", len(exports))
	}
	for _, e := range exports {
		t.Setenv(e[1], e[2]+e[3])
	}
	// when its console blocks run against `hookline run`
	blocks := regexp.MustCompile("(?s)```console\n.*?```\n").FindAllString(section, -1)
	steps := walkthroughSteps(t, "docs/usage-providers.md", "## Walk-through: "+usageSection[3:]+"\n"+strings.Join(blocks, ""))
	if len(steps) < 7 {
		t.Fatalf("only %d steps in the usage section, want at least 7", len(steps))
	}
	// then each prints what the page shows
	runSteps(t, steps, startRun(t))
}
