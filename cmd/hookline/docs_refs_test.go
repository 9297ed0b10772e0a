//go:build !oncall

package main

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// goTestValueFlags are the go test flags that take a value.
var goTestValueFlags = map[string]bool{
	"-run": true, "-bench": true, "-benchtime": true, "-count": true, "-timeout": true, "-tags": true,
	"-cpu": true, "-parallel": true, "-cpuprofile": true, "-memprofile": true, "-coverprofile": true,
	"-o": true, "-p": true, "-skip": true, "-fuzz": true, "-fuzztime": true, "-shuffle": true,
}

// goTestBoolFlags are the go test flags that take none.
var goTestBoolFlags = map[string]bool{
	"-v": true, "-short": true, "-benchmem": true, "-race": true, "-json": true, "-cover": true, "-failfast": true,
}

// docCommandLines returns every command line of a document: the lines of
// its code blocks and its code spans.
func docCommandLines(text string) []string {
	return append(codeLines(text), inlineSpans(text)...)
}

// goTest is one `go test` command of the docs.
type goTest struct {
	pkgs        []string
	run, bench  string
	customFlags []string
}

// parseGoTest reads the words after "go test".
func parseGoTest(args []string) goTest {
	var g goTest
	afterArgs := false // what follows -args goes to the test binary
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, value, hasValue := strings.Cut(a, "=")
		switch {
		case a == "-args":
			afterArgs = true
		case afterArgs:
			if strings.HasPrefix(a, "-") {
				g.customFlags = append(g.customFlags, strings.TrimPrefix(name, "-"))
			}
		case strings.HasPrefix(a, "./"):
			g.pkgs = append(g.pkgs, a)
		case goTestValueFlags[name]:
			if !hasValue && i+1 < len(args) {
				i++
				value = args[i]
			}
			switch name {
			case "-run":
				g.run = value
			case "-bench":
				g.bench = value
			}
		case goTestBoolFlags[name]:
		case strings.HasPrefix(a, "-"):
			g.customFlags = append(g.customFlags, strings.TrimPrefix(name, "-"))
		}
	}
	return g
}

// testFuncs returns the names of the Test, Benchmark, Fuzz and Example
// functions of the package in dir, and the text of its test files.
func testFuncs(t *testing.T, dir string) ([]string, string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	decl := regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz|Example)\w*)\(`)
	var names []string
	var all strings.Builder
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all.Write(b)
		for _, m := range decl.FindAllSubmatch(b, -1) {
			names = append(names, string(m[1]))
		}
	}
	return names, all.String()
}

// topLevelPattern is the part of a -run or -bench pattern that names the
// top-level test: go test splits the rest off at an unbracketed slash.
func topLevelPattern(p string) string {
	depth := 0
	for i, r := range p {
		switch r {
		case '[':
			depth++
		case ']':
			depth--
		case '/':
			if depth == 0 {
				return p[:i]
			}
		}
	}
	return p
}

// matchesAny reports whether pattern matches one of names with prefix.
func matchesAny(t *testing.T, pattern string, names []string, prefix string) bool {
	t.Helper()
	re, err := regexp.Compile(topLevelPattern(pattern))
	if err != nil {
		t.Errorf("pattern %q: %v", pattern, err)
		return true
	}
	for _, n := range names {
		if strings.HasPrefix(n, prefix) && re.MatchString(n) {
			return true
		}
	}
	return false
}

// makefileCommands returns the Makefile's recipe lines as a shell would
// run them: $(GO) as go, $$ as $, without exec and @.
func makefileCommands(t *testing.T) []string {
	t.Helper()
	var lines []string
	for _, line := range strings.Split(doc(t, "Makefile"), "\n") {
		if !strings.HasPrefix(line, "\t") {
			continue
		}
		line = strings.TrimPrefix(strings.TrimSpace(line), "@")
		line = strings.TrimPrefix(line, "exec ")
		line = strings.ReplaceAll(strings.ReplaceAll(line, "$(GO)", "go"), "$$", "$")
		// RUN_FLAGS is empty unless `make run RUN_FLAGS=...` passes flags.
		line = strings.TrimSpace(strings.ReplaceAll(line, "$(RUN_FLAGS)", ""))
		lines = append(lines, line)
	}
	return lines
}

// makeTargets returns the targets the Makefile defines.
func makeTargets(t *testing.T) map[string]bool {
	t.Helper()
	targets := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^([a-zA-Z_-]+):`).FindAllStringSubmatch(doc(t, "Makefile"), -1) {
		targets[m[1]] = true
	}
	return targets
}

// TestDocsGoAndMakeCommands: every go test, go run, go build and go
// install command in the README, the docs and the Makefile's recipes names packages that exist,
// a -run pattern that matches one of their tests and a -bench pattern one
// of their benchmarks, and custom flags their tests define; every make
// command names a target of the Makefile. A test renamed or a package
// moved fails here, not in a reader's terminal.
func TestDocsGoAndMakeCommands(t *testing.T) {
	targets := makeTargets(t)
	goCommands, makeCommands := 0, 0
	sources := map[string][]string{"Makefile": makefileCommands(t)}
	for _, file := range markdownFiles(t) {
		sources[file] = docCommandLines(doc(t, file))
	}
	for file, lines := range sources {
		for _, line := range lines {
			args := command(line)
			switch {
			case len(args) >= 2 && args[0] == "make":
				for _, target := range args[1:] {
					if strings.HasPrefix(target, "-") || strings.Contains(target, "=") {
						continue
					}
					makeCommands++
					if !targets[target] {
						t.Errorf("%s: %s: the Makefile has no target %q", file, line, target)
					}
				}
			case len(args) >= 3 && args[0] == "go" && args[1] == "test":
				goCommands++
				checkGoTest(t, file, line, parseGoTest(args[2:]))
			case len(args) >= 3 && args[0] == "go" && (args[1] == "run" || args[1] == "build" || args[1] == "install"):
				for _, a := range args[2:] {
					if strings.HasPrefix(a, "./") {
						goCommands++
						checkPackage(t, file, line, a)
						break
					}
				}
			}
		}
	}
	t.Logf("%d go and %d make commands", goCommands, makeCommands)
	if goCommands < 30 || makeCommands < 15 {
		t.Errorf("found %d go and %d make commands in the docs; the check would prove little", goCommands, makeCommands)
	}
}

// checkPackage reports a package path of a command that has no Go files.
func checkPackage(t *testing.T, file, line, pkg string) bool {
	t.Helper()
	if strings.HasSuffix(pkg, "/...") || strings.Contains(pkg, "$") {
		return false // every package, or one a shell variable names
	}
	goFiles, _ := filepath.Glob(filepath.Join(repoRoot, pkg, "*.go"))
	if len(goFiles) == 0 {
		t.Errorf("%s: %s: no Go package at %s", file, line, pkg)
		return false
	}
	return true
}

// checkGoTest checks one go test command's packages, patterns and flags.
func checkGoTest(t *testing.T, file, line string, g goTest) {
	t.Helper()
	if len(g.pkgs) == 0 {
		t.Errorf("%s: %s: no package", file, line)
	}
	var names []string
	var text strings.Builder
	checked := false
	for _, p := range g.pkgs {
		if !checkPackage(t, file, line, p) {
			continue
		}
		checked = true
		n, src := testFuncs(t, filepath.Join(repoRoot, p))
		names = append(names, n...)
		text.WriteString(src)
	}
	if !checked {
		return
	}
	if g.run != "" && g.run != "^$" && !matchesAny(t, g.run, names, "") {
		t.Errorf("%s: %s: -run %q matches no test of %s", file, line, g.run, strings.Join(g.pkgs, " "))
	}
	if g.bench != "" && !matchesAny(t, g.bench, names, "Benchmark") {
		t.Errorf("%s: %s: -bench %q matches no benchmark of %s", file, line, g.bench, strings.Join(g.pkgs, " "))
	}
	for _, f := range g.customFlags {
		if !strings.Contains(text.String(), `"`+f+`"`) {
			t.Errorf("%s: %s: the tests of %s define no flag -%s", file, line, strings.Join(g.pkgs, " "), f)
		}
	}
}

// TestDocsNameRealTests: every test, benchmark or fuzz target a document
// names in a code span (TestX, TestX* for a family, TestX/sub) is a
// function of some test file, so the docs' "proven by" columns cannot
// point at a test that was renamed or removed.
func TestDocsNameRealTests(t *testing.T) {
	var names []string
	err := filepath.WalkDir(repoRoot, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && p != repoRoot {
			return filepath.SkipDir
		}
		if d.IsDir() {
			if n, _ := testFuncs(t, p); len(n) > 0 {
				names = append(names, n...)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, n := range names {
		have[n] = true
	}
	ref := regexp.MustCompile(`^((?:Test|Benchmark|Fuzz)[A-Z0-9]\w*)(\*?)(/\S*)?$`)
	n := 0
	for _, file := range markdownFiles(t) {
		for _, span := range inlineSpans(doc(t, file)) {
			for _, word := range strings.FieldsFunc(span, func(r rune) bool { return r == ',' || r == ' ' }) {
				m := ref.FindStringSubmatch(word)
				if m == nil {
					continue
				}
				n++
				if m[2] == "*" {
					if !anyWithPrefix(names, m[1]) {
						t.Errorf("%s: no test is named %s*", file, m[1])
					}
					continue
				}
				if !have[m[1]] {
					t.Errorf("%s: no test is named %s", file, m[1])
				}
			}
		}
	}
	t.Logf("%d test names", n)
	if n < 40 {
		t.Errorf("found only %d test names in the docs; the check would prove little", n)
	}
}

// anyWithPrefix reports whether one of names begins with prefix.
func anyWithPrefix(names []string, prefix string) bool {
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			return true
		}
	}
	return false
}

// headingSlugs returns the anchors GitHub gives the headings of a
// markdown text: lower case, punctuation dropped, spaces as hyphens, and
// -1, -2, ... for repeats.
func headingSlugs(text string) map[string]bool {
	slugs := map[string]bool{}
	seen := map[string]int{}
	inBlock := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "```") {
			inBlock = !inBlock
			continue
		}
		if inBlock || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		slug := b.String()
		if k := seen[slug]; k > 0 {
			slugs[slug+"-"+strconv.Itoa(k)] = true
		} else {
			slugs[slug] = true
		}
		seen[slug]++
	}
	return slugs
}

// TestDocsLinksResolve: every relative link and image of the README and
// the docs points at a file of the repository, and every #anchor at a
// heading of its page, so that moving a section or a page cannot leave a
// dead link behind.
func TestDocsLinksResolve(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	n := 0
	for _, file := range markdownFiles(t) {
		for _, m := range link.FindAllStringSubmatch(prose(doc(t, file)), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			n++
			ref, anchor, _ := strings.Cut(target, "#")
			page := file
			if ref != "" {
				page = path.Join(path.Dir(file), ref)
				if _, err := os.Stat(filepath.Join(repoRoot, page)); err != nil {
					t.Errorf("%s: link %s: no file %s", file, target, page)
					continue
				}
			}
			if anchor != "" && !headingSlugs(doc(t, page))[anchor] {
				t.Errorf("%s: link %s: %s has no heading #%s", file, target, page, anchor)
			}
		}
	}
	t.Logf("%d relative links", n)
	if n < 30 {
		t.Errorf("found only %d relative links in the docs; the check would prove little", n)
	}
}
