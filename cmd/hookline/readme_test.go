package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/hookline/hookline/pkg/localrun"
)

// readme returns the repository's README.md.
func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReadmeSecretsTableMatchesCode: the development secrets the README
// publishes are exactly those a local run uses, so that signing from the
// README never answers 401.
func TestReadmeSecretsTableMatchesCode(t *testing.T) {
	// given the README's configuration table rows of HOOKLINE_*_SECRETS
	row := regexp.MustCompile("(?m)^\\| `(HOOKLINE_[A-Z0-9_]+_SECRETS)` \\| `([^`]*)` \\|")
	published := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(readme(t), -1) {
		published[m[1]] = m[2]
	}
	// then every secret in the code is published with its value, and no other
	for name, want := range localrun.DevSecrets {
		got, ok := published[name]
		if !ok {
			t.Errorf("README does not publish %s", name)
			continue
		}
		if got != want {
			t.Errorf("README publishes %s = %s, the code uses %s", name, got, want)
		}
	}
	for name := range published {
		if _, ok := localrun.DevSecrets[name]; !ok {
			t.Errorf("README publishes %s, which the code does not use", name)
		}
	}
	if !strings.Contains(readme(t), "| `PORT` | `8080`") {
		t.Errorf("README no longer gives the default PORT 8080")
	}
}
