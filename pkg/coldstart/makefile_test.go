package coldstart

import (
	"os"
	"strings"
	"testing"
)

// TestMakeBuildUsesReleaseFlags: `make build`, which makes what `make
// deploy` ships, links with the flags these measurements use.
func TestMakeBuildUsesReleaseFlags(t *testing.T) {
	b, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, "go) build") || strings.Contains(line, "$(GO) build") {
			if !strings.Contains(line, "./functions/") {
				continue
			}
			found = true
			if !strings.Contains(line, `-ldflags "`+ldflags+`"`) || !strings.Contains(line, "-trimpath") || !strings.Contains(line, "lambda.norpc") {
				t.Errorf("Makefile builds functions without -trimpath -tags lambda.norpc -ldflags %q:\n%s", ldflags, line)
			}
		}
	}
	if !found {
		t.Fatal("no function build line in the Makefile")
	}
}
