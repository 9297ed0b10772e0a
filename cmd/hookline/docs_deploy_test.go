//go:build !oncall

package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/stack"
)

// deployDoc is the page that says how to configure a deployed stack.
const deployDoc = "docs/deploy.md"

// envReaders are the trees of Go files that read the functions'
// environment: package config, and the app's wiring (the usage export's
// choice and OpenMeter's settings).
var envReaders = []string{"internal/config", "internal/app"}

// envRead matches a variable read by name: env.required, optional,
// duration, integer and lookup, ratio, and the app's get and dur.
var envRead = regexp.MustCompile(`(?:\be\.(?:required|optional|duration|integer|lookup)\(|\bratio\(e, |\bget\(|\bdur\(|\.Lookup\()"([A-Z][A-Z0-9_]*)"`)

// envVarsRead returns every variable the functions' configuration reads:
// those read by name, the Secrets Manager ID of each credential, and the
// queue URLs.
func envVarsRead(t *testing.T) []string {
	t.Helper()
	seen := map[string]bool{config.QueueURLVar("<queue>"): true}
	for _, name := range config.SecretVars {
		seen[name] = true
		seen[name+config.SecretIDSuffix] = true
	}
	for _, dir := range envReaders {
		err := filepath.WalkDir(filepath.Join(repoRoot, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			b, err := os.ReadFile(path)
			for _, m := range envRead.FindAllStringSubmatch(string(b), -1) {
				seen[m[1]] = true
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// TestDeployDocNamesEveryParameterAndVariable: docs/deploy.md names every
// parameter of infra/template.yaml and every variable the functions'
// configuration reads, so that a deployer finds each one there.
func TestDeployDocNamesEveryParameterAndVariable(t *testing.T) {
	// given the template's parameters and the variables the code reads
	tpl, err := stack.Load(filepath.Join(repoRoot, "infra", "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var params []string
	for name := range tpl.Raw().Parameters {
		params = append(params, name)
	}
	sort.Strings(params)
	vars := envVarsRead(t)
	if len(params) < 20 || len(vars) < 60 {
		t.Fatalf("found %d parameters and %d variables; the template or the readers moved", len(params), len(vars))
	}
	// then the deploy page names each, as a word of its own
	text := doc(t, deployDoc)
	for _, kind := range []struct {
		what  string
		names []string
	}{{"template parameter", params}, {"variable", vars}} {
		for _, name := range kind.names {
			if !regexp.MustCompile(`(^|[^A-Za-z0-9_])` + regexp.QuoteMeta(name) + `($|[^A-Za-z0-9_])`).MatchString(text) {
				t.Errorf("%s does not name the %s %s", deployDoc, kind.what, name)
			}
		}
	}
}
