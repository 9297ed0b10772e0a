//go:build !oncall

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hookline/hookline/internal/dev/lab"
)

// TestLabPayloadsOfferedAct: every body `hookline lab` is told to send
// in the Makefile and the docs, and every one its help offers, loads,
// which means its rule acts on it (a body that would charge nothing is
// refused at load; internal/dev/lab runs each and counts the charges).
func TestLabPayloadsOfferedAct(t *testing.T) {
	// Given the commands that name a body, and the lab's help
	sent := regexp.MustCompile(`--(?:suite-)?payload[ =](testdata/payloads/[\w.-]+\.json)`)
	offered := map[string][]string{}
	for _, doc := range []string{"Makefile", "docs/lab.md", "docs/benchmarks.md", "testdata/payloads/README.md"} {
		raw, err := os.ReadFile(filepath.Join(repoRoot, doc))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range sent.FindAllStringSubmatch(string(raw), -1) {
			offered[m[1]] = append(offered[m[1]], doc)
		}
	}
	cmd := newLabCmd()
	help := cmd.Long + cmd.Example + cmd.Flags().FlagUsages()
	for _, m := range regexp.MustCompile(`testdata/payloads/[\w.-]+\.json`).FindAllString(help, -1) {
		offered[m] = append(offered[m], "hookline lab --help")
	}
	if len(offered) < 2 {
		t.Fatalf("found %v; want the Stripe and Adyen bodies named", offered)
	}
	for path, where := range offered {
		// When the lab loads it
		_, err := lab.LoadPayload(filepath.Join(repoRoot, path), 0)
		// Then it is a body the lab charges
		if err != nil {
			t.Errorf("%s names %s: %v", strings.Join(where, ", "), path, err)
		}
	}
}
