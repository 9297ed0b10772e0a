package paymentworker

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestEveryOutcomeHasAMetric: each outcome the worker can reach (every
// outcome{name: ...} in its source) is counted under a named metric.
func TestEveryOutcomeHasAMetric(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	named := regexp.MustCompile(`outcome\{name: "([a-z_]+)"`)
	seen := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range named.FindAllStringSubmatch(string(src), -1) {
			seen++
			if outcomeMetrics[m[1]] == "" {
				t.Errorf("%s: outcome %q has no metric", f, m[1])
			}
		}
	}
	if seen < len(outcomeMetrics) {
		t.Fatalf("found %d outcomes in the source, fewer than the %d metrics", seen, len(outcomeMetrics))
	}
}
