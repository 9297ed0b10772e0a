//go:build !oncall

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/hookline/hookline/internal/dev/localrun"
	"github.com/hookline/hookline/pkg/webhook"
)

// The README and the pages of docs/ are checked against the code: every
// hookline command they show parses, every go test and make command names
// a package, a test and a target that exist, every relative link and
// anchor resolves, and the walk-throughs run (walkthrough_test.go).

// repoRoot is the repository, seen from this package.
const repoRoot = "../.."

// docCommands lists documents whose hookline commands are parsed, with
// how many command lines each holds at least, so that a page that goes
// missing or loses its commands fails. Every other page of docs/ is
// parsed too.
var docCommands = map[string]int{
	"README.md":                 3,
	"docs/local-run.md":         17,
	"docs/oncall.md":            12,
	"docs/payment-providers.md": 5,
	"docs/usage-providers.md":   7,
	"docs/stripe.md":            3,
	"docs/lab.md":               5,
	"docs/deploy.md":            1,
	"docs/lab/live.md":          2,
}

// onCallDoc is the page whose every command must be an on-call command,
// one the on-call build (make oncall) has.
const onCallDoc = "docs/oncall.md"

// doc returns a document of the repository by its path from the root.
func doc(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// markdownFiles are README.md and every page under docs/.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(repoRoot, "docs"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".md") {
			return err
		}
		rel, err := filepath.Rel(repoRoot, path)
		files = append(files, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// codeLines returns the lines inside the fenced code blocks of text, with
// a "$ " prompt and a trailing "# comment" removed and lines continued
// with a backslash joined.
func codeLines(text string) []string {
	var out []string
	inBlock, carry := false, ""
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "```") {
			inBlock, carry = !inBlock, ""
			continue
		}
		if !inBlock {
			continue
		}
		if rest, ok := strings.CutSuffix(line, "\\"); ok {
			carry += rest + " "
			continue
		}
		line = strings.TrimPrefix(carry+line, "$ ")
		carry = ""
		if c, _, ok := strings.Cut(line, " #"); ok {
			line = c
		}
		out = append(out, line)
	}
	return out
}

// inlineSpans returns the `code spans` of text outside fenced blocks; a
// span may run over a line break, which reads as a space.
func inlineSpans(text string) []string {
	var spans []string
	for _, para := range strings.Split(prose(text), "\n\n") {
		para = strings.ReplaceAll(para, "\n", " ")
		for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(para, -1) {
			spans = append(spans, strings.ReplaceAll(m[1], `\|`, "|")) // a pipe escaped in a table
		}
	}
	return spans
}

// prose returns text without its fenced code blocks.
func prose(text string) string {
	var lines []string
	inBlock := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "```") {
			inBlock = !inBlock
			continue
		}
		if !inBlock {
			lines = append(lines, line)
		}
	}
	return strings.Join(lines, "\n")
}

// shellWords splits a command line as a shell would for these documents:
// on spaces, with '...' and "..." quoting.
func shellWords(line string) []string {
	var words []string
	var cur strings.Builder
	quote, inWord := rune(0), false
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// command returns the words of line from its command on: VAR=value
// assignments before it are dropped, and `go run ./cmd/hookline` reads
// as hookline.
func command(line string) []string {
	args := shellWords(line)
	for len(args) > 0 && strings.Contains(args[0], "=") && !strings.HasPrefix(args[0], "-") {
		args = args[1:]
	}
	if len(args) > 2 && args[0] == "go" && args[1] == "run" && args[2] == "./cmd/hookline" {
		args = append([]string{"hookline"}, args[3:]...)
	}
	if len(args) > 0 && args[0] == "./bin/hookline" {
		args[0] = "hookline"
	}
	return args
}

// parseCommand checks that args (after "hookline") name a command that
// runs, with flags and arguments it accepts, and returns it.
func parseCommand(args []string) (*cobra.Command, error) {
	cmd, rest, err := newRoot().Find(args)
	if err != nil {
		return nil, err
	}
	if err := cmd.ParseFlags(rest); err != nil {
		return nil, err
	}
	if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
		return nil, err
	}
	if err := cmd.ValidateRequiredFlags(); err != nil {
		return nil, err
	}
	if err := cmd.ValidateFlagGroups(); err != nil {
		return nil, err
	}
	// A group holds only subcommands; lab also runs itself, with flags.
	if !cmd.Runnable() || (cmd.HasSubCommands() && !cmd.HasAvailableLocalFlags()) {
		return nil, errNotRunnable
	}
	return cmd, nil
}

var errNotRunnable = errors.New("not a command that runs")

// namesCommand checks a command that prose names, perhaps with only some
// of its flags or arguments: the command exists, and so does every flag
// it names.
func namesCommand(args []string) error {
	cmd, rest, err := newRoot().Find(args)
	if err != nil {
		return err
	}
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if !strings.HasPrefix(a, "-") {
			if cmd.HasSubCommands() {
				return fmt.Errorf("%s has no command %q", cmd.CommandPath(), a)
			}
			continue
		}
		name, _, withValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f := cmd.Flags().Lookup(name)
		if f == nil {
			f = cmd.InheritedFlags().Lookup(name)
		}
		if !strings.HasPrefix(a, "--") {
			if f = cmd.Flags().ShorthandLookup(name); f == nil {
				f = cmd.InheritedFlags().ShorthandLookup(name)
			}
		}
		if f == nil {
			return fmt.Errorf("%s has no flag %s", cmd.CommandPath(), a)
		}
		if f.NoOptDefVal == "" && !withValue {
			i++ // the flag's value
		}
	}
	return nil
}

// topCommand is the child of the root that cmd belongs to.
func topCommand(cmd *cobra.Command) *cobra.Command {
	for cmd.HasParent() && cmd.Parent().HasParent() {
		cmd = cmd.Parent()
	}
	return cmd
}

// TestDocsCommandsParse: every hookline command line in a code block of
// the README and the docs, and every hookline command in a code span
// without a placeholder, names a real command: a line with flags and
// arguments it accepts, a code span with flags it has, so the sections that are not executed (they act on queues, or
// on AWS) cannot drift. The on-call page's commands are on-call commands,
// which the on-call build has.
func TestDocsCommandsParse(t *testing.T) {
	files := map[string]int{}
	for _, file := range markdownFiles(t) {
		files[file] = 0
	}
	for file, least := range docCommands {
		files[file] = least
	}
	for file, least := range files {
		t.Run(file, func(t *testing.T) {
			text := doc(t, file)
			n := 0
			check := func(line string, args []string) {
				cmd, err := parseCommand(args[1:])
				if err != nil {
					t.Errorf("%s: %s: %v", file, line, err)
					return
				}
				if file == onCallDoc && topCommand(cmd).GroupID != "oncall" {
					t.Errorf("%s: %s: not an on-call command; the on-call build (make oncall) lacks it", file, line)
				}
			}
			for _, line := range codeLines(text) {
				if args := command(line); len(args) > 0 && args[0] == "hookline" {
					n++
					check(line, args)
				}
			}
			t.Logf("%s: %d hookline command lines in code blocks", file, n)
			if n < least {
				t.Errorf("%s: %d hookline command lines in code blocks, want at least %d", file, n, least)
			}
			for _, span := range inlineSpans(text) {
				args := command(span)
				if len(args) < 2 || args[0] != "hookline" || strings.ContainsAny(span, "<|") {
					continue // not a command, or one with a placeholder
				}
				if err := namesCommand(args[1:]); err != nil {
					t.Errorf("%s: `%s`: %v", file, span, err)
				}
			}
		})
	}
}

// TestMakefileCommandsParse: the hookline commands the Makefile runs
// (make run, make lab, make lab-serve) parse as the docs' do.
func TestMakefileCommandsParse(t *testing.T) {
	n := 0
	for _, line := range makefileCommands(t) {
		if args := command(line); len(args) > 0 && args[0] == "hookline" {
			n++
			if _, err := parseCommand(args[1:]); err != nil {
				t.Errorf("Makefile: %s: %v", line, err)
			}
		}
	}
	if n < 3 {
		t.Errorf("the Makefile runs %d hookline commands, want at least 3 (run, lab, lab serve)", n)
	}
}

// TestDocsSecretsTableMatchesCode: the development secrets the docs
// publish are exactly those a local run uses, so that signing from the
// docs never answers 401.
func TestDocsSecretsTableMatchesCode(t *testing.T) {
	// given the local-run page's table rows of HOOKLINE_*_SECRETS
	text := doc(t, "docs/local-run.md")
	row := regexp.MustCompile("(?m)^\\| `(HOOKLINE_[A-Z0-9_]+_SECRETS)` \\| `([^`]*)` \\|")
	published := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(text, -1) {
		published[m[1]] = m[2]
	}
	// then every secret in the code is published with its value, and no other
	for name, want := range localrun.DevSecrets {
		got, ok := published[name]
		if !ok {
			t.Errorf("docs/local-run.md does not publish %s", name)
			continue
		}
		if got != want {
			t.Errorf("docs/local-run.md publishes %s = %s, the code uses %s", name, got, want)
		}
	}
	for name := range published {
		if _, ok := localrun.DevSecrets[name]; !ok {
			t.Errorf("docs/local-run.md publishes %s, which the code does not use", name)
		}
	}
	if !strings.Contains(text, "| `PORT` | `8080`") {
		t.Errorf("docs/local-run.md no longer gives the default PORT 8080")
	}
}

// TestDocsSourcesParse: the HOOKLINE_SOURCES of the payment providers page (the
// example of every preset, and the one of `make run`) are accepted as
// they stand, and the page's table and example name every preset.
func TestDocsSourcesParse(t *testing.T) {
	text := doc(t, "docs/payment-providers.md")
	// given the JSON code block and the exported variable
	var lists []string
	if m := regexp.MustCompile("(?s)```json\n(\\[.*?)```").FindStringSubmatch(text); m != nil {
		lists = append(lists, m[1])
	}
	if m := regexp.MustCompile(`(?s)export HOOKLINE_SOURCES='(.*?)'`).FindStringSubmatch(text); m != nil {
		lists = append(lists, m[1])
	}
	if len(lists) != 2 {
		t.Fatalf("docs/payment-providers.md: found %d of the 2 HOOKLINE_SOURCES examples", len(lists))
	}
	// then each parses, with its placeholders filled in, and the first has
	// a source of every preset
	placeholder := regexp.MustCompile(`<[^>]*>`)
	for i, list := range lists {
		specs, err := webhook.ParseSources(placeholder.ReplaceAllString(list, "placeholder"))
		if err != nil {
			t.Errorf("docs/payment-providers.md example %d: %v", i, err)
			continue
		}
		if i > 0 {
			continue
		}
		have := map[webhook.Scheme]bool{}
		for _, s := range specs {
			have[s.Scheme] = true
		}
		for _, s := range webhook.Schemes() {
			if s == webhook.SchemeStandard || s == webhook.SchemeStripe {
				continue
			}
			if !have[s] {
				t.Errorf("docs/payment-providers.md: the sources example has no %s source", s)
			}
			if !strings.Contains(text, "| `"+string(s)+"` |") {
				t.Errorf("docs/payment-providers.md: the presets table has no row for %s", s)
			}
		}
	}
}

// TestReadmeIsShort: the README stays a page a newcomer reads in ten
// minutes; the rest belongs in docs/.
func TestReadmeIsShort(t *testing.T) {
	if n := strings.Count(doc(t, "README.md"), "\n"); n > 200 {
		t.Errorf("README.md has %d lines, want at most 200: move the detail to docs/", n)
	}
}
