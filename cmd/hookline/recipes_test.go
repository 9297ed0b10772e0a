//go:build !oncall

package main

import (
	"regexp"
	"strings"
	"testing"
)

// docSection returns the section of a page that starts at heading, up to
// the next heading of the same or a higher level.
func docSection(t *testing.T, path, heading string) string {
	t.Helper()
	text := doc(t, path)
	start := strings.Index(text, "\n"+heading+"\n")
	if start < 0 {
		t.Fatalf("%s has no %q section", path, heading)
	}
	section := text[start+1:]
	level := heading[:strings.Index(heading, " ")+1]
	rest := section[len(heading):]
	end := len(rest)
	for _, h := range []string{"\n## ", "\n" + level} {
		if i := strings.Index(rest, h); i >= 0 && i < end {
			end = i
		}
	}
	return section[:len(heading)+end]
}

// TestStripeSumsRecipeRuns: the Stripe sums recipe of docs/usage-providers.md
// runs as written: the run's terminal's exports (bash evaluates them, the
// start date among them) configure `hookline run`, and the second
// terminal's commands, its `source`, `export` and `curl` lines included,
// print what the page shows.
func TestStripeSumsRecipeRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole local system")
	}
	const path = "docs/usage-providers.md"
	section := docSection(t, path, "### Stripe's sums against `make run`")
	// given the variables the run's terminal exports
	runTerminal(t, path, section)
	// when the second terminal's commands run against that run
	blocks := regexp.MustCompile("(?s)```console\n.*?```\n").FindAllString(section, -1)
	steps := walkthroughSteps(t, path, "## Walk-through: Stripe's sums\n"+strings.Join(blocks, ""))
	if len(steps) < 9 {
		t.Fatalf("only %d steps in the Stripe sums recipe, want at least 9", len(steps))
	}
	// then each prints what the page shows
	runSteps(t, steps, startRun(t))
}
