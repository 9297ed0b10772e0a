//go:build !oncall

package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/ops"
)

// The walk-throughs of the README and docs/local-run.md are executable.
// In a "## Walk-through" section:
//
//   - a ```console block holds commands after "$ " and, below each, the
//     lines it prints (in order; other lines may come between them);
//   - a ```text make-run block holds lines the `make run` terminal prints,
//     each exactly once (one charge, one page).
//
// In an expected line, "..." stands for any text. Read-only commands
// (admission, explain, list, grep) are retried until their output matches,
// as a reader would wait for the worker; the others run exactly once.

// step is one command, or one wait on the run terminal, of a walk-through.
type step struct {
	section string
	command string   // "" for a make-run block
	want    []string // expected lines
}

var fence = regexp.MustCompile("^```(\\S*)\\s*(\\S*)")

// walkthroughSteps reads the steps of every walk-through in the text of a
// document.
func walkthroughSteps(t *testing.T, path, text string) []step {
	t.Helper()
	var steps []step
	section, inBlock, kind := "", false, ""
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if !inBlock && strings.HasPrefix(line, "## ") {
			section = strings.TrimPrefix(line, "## ")
			continue
		}
		if m := fence.FindStringSubmatch(line); m != nil {
			if inBlock {
				inBlock = false
				continue
			}
			inBlock, kind = true, ""
			if !strings.HasPrefix(section, "Walk-through") {
				continue
			}
			switch {
			case m[1] == "console":
				kind = "console"
			case m[1] == "text" && m[2] == "make-run":
				kind = "make-run"
				steps = append(steps, step{section: section})
			case m[1] == "sh":
				t.Errorf("%s %q: a ```sh block in a walk-through is not checked; use ```console with $ prompts", path, section)
			}
			continue
		}
		if !inBlock || kind == "" {
			continue
		}
		switch {
		case kind == "console" && strings.HasPrefix(line, "$ "):
			steps = append(steps, step{section: section, command: strings.TrimPrefix(line, "$ ")})
		case kind == "console" && len(steps) == 0:
			t.Errorf("%s %q: output before any command: %q", path, section, line)
		case strings.TrimSpace(line) != "":
			steps[len(steps)-1].want = append(steps[len(steps)-1].want, line)
		}
	}
	return steps
}

// lineMatcher compiles an expected line: "..." matches any text.
func lineMatcher(want string) *regexp.Regexp {
	parts := strings.Split(want, "...")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".*") + "$")
}

// matchInOrder reports the first expected line not found, in order, among
// the output lines; "" when all are.
func matchInOrder(output string, want []string) string {
	lines := strings.Split(output, "\n")
	i := 0
	for _, w := range want {
		re := lineMatcher(strings.TrimRight(w, " "))
		for ; i < len(lines) && !re.MatchString(strings.TrimRight(lines[i], " ")); i++ {
		}
		if i == len(lines) {
			return w
		}
		i++
	}
	return ""
}

// readOnly reports whether a command may be repeated while waiting.
func readOnly(args []string) bool {
	if len(args) >= 1 && args[0] == "grep" {
		return true
	}
	if len(args) < 2 {
		return false
	}
	switch args[0] + " " + args[1] {
	case "workload admission", "workload explain", "event explain", "workload list", "dlq list", "dlq peek":
		return true
	}
	return false
}

// syncBuffer is a bytes.Buffer safe for the run's writers and the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// walkthroughDocs are the documents whose walk-throughs run, in order,
// with how many steps each holds at least.
var walkthroughDocs = []struct {
	path  string
	least int
}{
	{path: "README.md", least: 4},
	{path: "docs/local-run.md", least: 21},
}

// TestWalkthroughs runs every walk-through of the README and then of
// docs/local-run.md, in order, against one `hookline run` started as
// `make run` starts it, and checks the outputs the documents show.
func TestWalkthroughs(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole local system")
	}
	var steps []step
	for _, file := range walkthroughDocs {
		s := walkthroughSteps(t, file.path, doc(t, file.path))
		if len(s) < file.least {
			t.Fatalf("only %d walk-through steps found in %s, want at least %d", len(s), file.path, file.least)
		}
		steps = append(steps, s...)
	}
	runOut := startRun(t)
	runSteps(t, steps, runOut)
}

// startRun starts `hookline run` as `make run` starts it, in a fresh
// directory with the repository's fixtures, with the environment the test
// set, and points the commands of the test at it.
func startRun(t *testing.T) *syncBuffer {
	t.Helper()
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	// given `hookline run` in a fresh directory with the repository's fixtures
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(repo, "testdata"), filepath.Join(dir, "testdata")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for _, v := range []string{"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL_DYNAMODB", "HOOKLINE_API_URL", "HOOKLINE_PROVIDER_URL",
		controlURLVar, ops.EnvFileVar} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	// The run finds the SQS emulator beside the repository's template; the
	// endpoints and metrics files stay in the temporary directory, away
	// from a developer's own `make run`.
	t.Setenv("HOOKLINE_TEMPLATE", filepath.Join(repo, "infra", "template.yaml"))
	ctx, cancel := context.WithCancel(context.Background())
	runOut := &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- dispatch(ctx, []string{"run", "--addr", "127.0.0.1:0", "--reconcile-every", "1s"}, runOut)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("hookline run did not stop")
		}
	})
	env := waitEndpoints(t, done)
	for k, v := range env {
		t.Setenv(k, v)
	}
	return runOut
}

// runSteps runs the steps of walk-throughs against the run whose terminal
// prints to runOut, and checks the outputs the documents show.
func runSteps(t *testing.T, steps []step, runOut *syncBuffer) {
	t.Helper()
	for i, s := range steps {
		if s.command == "" {
			// then the run terminal shows the lines, in time, each once:
			// one charge, one page per trip
			label := fmt.Sprintf("step %d (%s): the make run terminal", i, s.section)
			waitFor(t, 60*time.Second, func() string { return runOut.String() }, s.want, label)
			for _, w := range s.want {
				if n := countMatches(runOut.String(), w); n != 1 {
					t.Fatalf("%s: %d lines match %q, want exactly one:\n%s", label, n, w, runOut.String())
				}
			}
			continue
		}
		args := strings.Fields(s.command)
		if args[0] == "go" && len(args) > 2 && args[1] == "run" {
			args = append([]string{"hookline"}, args[3:]...)
		}
		if terminalSetting(t, args) {
			continue
		}
		var run func() string
		switch args[0] {
		case "hookline":
			run = func() string {
				var out bytes.Buffer
				dispatch(context.Background(), args[1:], &out)
				return out.String()
			}
		case "grep":
			run = func() string { return grep(t, args[1], args[2]) }
		case "curl":
			run = func() string { return shell(t, s.command) }
		default:
			t.Fatalf("step %d (%s): the docs run %q, which this test cannot run", i, s.section, s.command)
		}
		label := fmt.Sprintf("step %d (%s): $ %s", i, s.section, s.command)
		if readOnly(args[1:]) || args[0] == "grep" {
			waitFor(t, 60*time.Second, run, s.want, label)
			continue
		}
		out := run()
		t.Logf("%s\n%s", label, out)
		if miss := matchInOrder(out, s.want); miss != "" {
			t.Fatalf("%s\nprinted:\n%s\nwithout the document's line:\n%s", label, out, miss)
		}
	}
}

// terminalSetting carries out a command that sets the second terminal's
// environment: `export NAME=value` and `source FILE` (the endpoints file).
// It reports whether args was one.
func terminalSetting(t *testing.T, args []string) bool {
	t.Helper()
	switch {
	case len(args) == 2 && args[0] == "export":
		name, value, ok := strings.Cut(args[1], "=")
		if !ok {
			t.Fatalf("the docs export %q, which sets nothing", args[1])
		}
		t.Setenv(name, strings.Trim(value, `'"`))
		return true
	case len(args) == 2 && (args[0] == "source" || args[0] == "."):
		f, err := os.Open(args[1])
		if err != nil {
			t.Fatalf("the docs source %s: %v", args[1], err)
		}
		defer f.Close()
		env, err := ops.ParseEnvFile(f)
		if err != nil {
			t.Fatalf("the docs source %s: %v", args[1], err)
		}
		for k, v := range env {
			t.Setenv(k, v)
		}
		return true
	}
	return false
}

// shell runs a command line of the docs as a terminal does, with the
// environment the walk-through has set, and returns what it prints.
func shell(t *testing.T, line string) string {
	t.Helper()
	out, err := exec.Command("bash", "-c", line).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("%s\n(%v)", out, err)
	}
	return string(out)
}

// runTerminal reads the ```sh block of a page that ends in `make run`
// (or `go run ./cmd/hookline run`): the variables the lines before it
// set, run by bash as a terminal runs them, become the test's
// environment, for the run that startRun starts next.
func runTerminal(t *testing.T, path, text string) {
	t.Helper()
	for _, block := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(text, -1) {
		lines := strings.Split(strings.TrimRight(block[1], "\n"), "\n")
		last := lines[len(lines)-1]
		if last != "make run" && last != "go run ./cmd/hookline run" {
			continue
		}
		script := strings.Join(lines[:len(lines)-1], "\n") + "\nenv -0"
		out, err := exec.Command("bash", "-ec", script).Output()
		if err != nil {
			t.Fatalf("%s: the lines before %q: %v", path, last, err)
		}
		for _, kv := range strings.Split(string(out), "\x00") {
			name, value, ok := strings.Cut(kv, "=")
			if ok && name != "_" && name != "SHLVL" && name != "PWD" && os.Getenv(name) != value {
				t.Setenv(name, value)
			}
		}
		return
	}
	t.Fatalf("%s has no ```sh block that ends in make run", path)
}

// ownRunDocs are pages whose walk-throughs run against a `make run` of
// their own, configured by the page's first terminal (runTerminal), with
// how many steps each holds at least.
var ownRunDocs = []struct {
	path  string
	least int
}{
	{path: "docs/usage-walkthrough.md", least: 12},
}

// TestUsageWalkthroughs runs each page of ownRunDocs from its first
// terminal's exports and `make run` to the last command of its second
// terminal, and checks the outputs the page shows.
func TestUsageWalkthroughs(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole local system")
	}
	for _, page := range ownRunDocs {
		t.Run(page.path, func(t *testing.T) {
			// given the variables the page's first terminal exports
			text := doc(t, page.path)
			runTerminal(t, page.path, text)
			steps := walkthroughSteps(t, page.path, text)
			if len(steps) < page.least {
				t.Fatalf("only %d walk-through steps found in %s, want at least %d", len(steps), page.path, page.least)
			}
			// when its second terminal's commands run against that make run,
			// then each prints what the page shows
			runSteps(t, steps, startRun(t))
		})
	}
}

// waitEndpoints waits for the endpoints file of `hookline run`.
func waitEndpoints(t *testing.T, done <-chan int) map[string]string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case code := <-done:
			t.Fatalf("hookline run exited %d", code)
		default:
		}
		if f, err := os.Open(endpointsFile); err == nil {
			env, err := ops.ParseEnvFile(f)
			f.Close()
			if err == nil && env["HOOKLINE_PROVIDER_URL"] != "" {
				return env
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("hookline run wrote no endpoints file in 60s")
	return nil
}

// waitFor re-reads output until the wanted lines appear or the time is up.
func waitFor(t *testing.T, limit time.Duration, output func() string, want []string, label string) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		out := output()
		miss := matchInOrder(out, want)
		if miss == "" {
			t.Logf("%s\n%s", label, lastLines(out, 40))
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s\nprinted:\n%s\nwithout the document's line:\n%s", label, out, miss)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// countMatches counts the lines of output that the expected line matches.
func countMatches(output, want string) int {
	re := lineMatcher(strings.TrimRight(want, " "))
	n := 0
	for _, line := range strings.Split(output, "\n") {
		if re.MatchString(strings.TrimRight(line, " ")) {
			n++
		}
	}
	return n
}

// lastLines returns at most n trailing lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// grep is the walk-throughs' `grep PATTERN FILE`.
func grep(t *testing.T, pattern, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		return ""
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, pattern) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

func TestLineMatcher(t *testing.T) {
	for _, tc := range []struct {
		want, line string
		ok         bool
	}{
		{want: "200 {...}", line: `200 {"allowed":true}`, ok: true},
		{want: "200 {...}", line: `423 {"allowed":false}`},
		{want: "a ... b", line: "a x y b", ok: true},
		{want: "exact", line: "exactly"},
		{want: "x.y", line: "xzy"},
	} {
		if got := lineMatcher(tc.want).MatchString(tc.line); got != tc.ok {
			t.Errorf("%q vs %q: %v", tc.want, tc.line, got)
		}
	}
	if miss := matchInOrder("a\nb\nc", []string{"a", "c"}); miss != "" {
		t.Errorf("in order: missed %q", miss)
	}
	if miss := matchInOrder("a\nb\nc", []string{"c", "a"}); miss != "c" && miss != "a" {
		t.Errorf("out of order matched")
	}
}
