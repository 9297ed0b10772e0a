package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/hookline/hookline/internal/dev/localrun"
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

// TestReadmeCommandsParse: every hookline command line in any README code
// block names a real command with flags and arguments it accepts, so the
// on-call sections (not executed, since they act on queues) cannot drift.
func TestReadmeCommandsParse(t *testing.T) {
	inBlock, n := false, 0
	for _, line := range strings.Split(readme(t), "\n") {
		if strings.HasPrefix(line, "```") {
			inBlock = !inBlock
			continue
		}
		if !inBlock {
			continue
		}
		line = strings.TrimPrefix(line, "$ ")
		if c, _, ok := strings.Cut(line, "#"); ok {
			line = c
		}
		args := strings.Fields(line)
		for len(args) > 0 && strings.Contains(args[0], "=") && !strings.HasPrefix(args[0], "-") {
			args = args[1:] // VAR=value before the command
		}
		if len(args) > 2 && args[0] == "go" && args[1] == "run" && args[2] == "./cmd/hookline" {
			args = args[2:]
		}
		if len(args) == 0 || (args[0] != "hookline" && args[0] != "./cmd/hookline") {
			continue
		}
		n++
		root := newRoot()
		cmd, rest, err := root.Find(args[1:])
		if err != nil {
			t.Errorf("README: %s: %v", line, err)
			continue
		}
		if err := cmd.ParseFlags(rest); err != nil {
			t.Errorf("README: %s: %v", line, err)
			continue
		}
		if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
			t.Errorf("README: %s: %v", line, err)
			continue
		}
		if err := cmd.ValidateRequiredFlags(); err != nil {
			t.Errorf("README: %s: %v", line, err)
		}
		if err := cmd.ValidateFlagGroups(); err != nil {
			t.Errorf("README: %s: %v", line, err)
		}
		// A group holds only subcommands; lab also runs itself, with flags.
		if !cmd.Runnable() || (cmd.HasSubCommands() && !cmd.HasAvailableLocalFlags()) {
			t.Errorf("README: %s: not a command that runs", line)
		}
	}
	if n < 21 {
		t.Fatalf("only %d hookline command lines found in the README", n)
	}
}
