package coldstart

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestMakeBuildUsesReleaseFlags: `make build`, which makes what `make
// deploy` ships, links with the flags these measurements use.
func TestMakeBuildUsesReleaseFlags(t *testing.T) {
	b, err := os.ReadFile("../../../Makefile")
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

// TestMakeRunStopsCleanlyOnCtrlC: `make run` ends with Ctrl-C, and a clean
// stop must not end in "make: *** Error 1". `go run` exits 1 whenever an
// interrupt reaches it, whatever its program returned (seen: the program
// exited 0 and go run 1), so the recipe builds the CLI and execs it.
func TestMakeRunStopsCleanlyOnCtrlC(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	cmd := exec.Command("make", "-n", "run")
	cmd.Dir = "../../.."
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n run: %v\n%s", err, out)
	}
	var runs []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "hookline run") {
			runs = append(runs, line)
		}
	}
	if len(runs) != 1 {
		t.Fatalf("make run starts hookline run %d times, want once:\n%s", len(runs), out)
	}
	if strings.Contains(runs[0], "go run") || !strings.HasPrefix(strings.TrimSpace(runs[0]), "exec ") {
		t.Errorf("make run starts the system with %q: want the built CLI under exec, so that Ctrl-C's exit status is the program's", runs[0])
	}
}
