//go:build !oncall

package main

import (
	"regexp"
	"strings"
	"testing"
)

// usageSection is the recipe of docs/usage-providers.md that tries usage
// at the door against `make run`.
const usageSection = "### Usage against `make run`"

// TestUsagePageRuns: the recipe of usage at the door in
// docs/usage-providers.md runs as it stands: the variables its run's
// terminal exports configure `hookline run` (a CloudEvents source beside
// the template's two), and each command of its console block prints the
// lines the page shows. The section ends at the next recipe, which has a
// run of its own (TestStripeSumsRecipeRuns).
func TestUsagePageRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole local system")
	}
	const path = "docs/usage-providers.md"
	section := docSection(t, path, usageSection)
	// given the variables the page exports
	runTerminal(t, path, section)
	// when its console blocks run against `hookline run`
	blocks := regexp.MustCompile("(?s)```console\n.*?```\n").FindAllString(section, -1)
	steps := walkthroughSteps(t, path, "## Walk-through: usage at the door\n"+strings.Join(blocks, ""))
	if len(steps) < 7 {
		t.Fatalf("only %d steps in the usage section, want at least 7", len(steps))
	}
	// then each prints what the page shows
	runSteps(t, steps, startRun(t))
}
