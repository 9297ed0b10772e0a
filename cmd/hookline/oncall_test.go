package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// harnessPackages are what the on-call build must not link: the test
// framework, profilers, the embedded DynamoDB, the plotting library, and
// the project's local harness, lab and test helpers.
var harnessPackages = []string{
	"testing",
	"runtime/pprof",
	"github.com/google/pprof/",
	"github.com/truora/minidyn",
	"gonum.org/",
	"github.com/hookline/hookline/internal/dev/",
	"github.com/hookline/hookline/internal/testkit",
}

// TestOnCallBuildLinksNoHarness: the binary an operator runs against AWS
// (go build -tags oncall, make oncall) links none of the harness, and has
// only the on-call commands.
func TestOnCallBuildLinksNoHarness(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-tags", "oncall", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps -tags oncall: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 50 {
		t.Fatalf("go list -deps gave %d packages; the check would prove nothing", len(deps))
	}
	for _, dep := range deps {
		for _, bad := range harnessPackages {
			if dep == bad || (strings.HasSuffix(bad, "/") && strings.HasPrefix(dep, bad)) || strings.HasPrefix(dep, bad+"/") {
				t.Errorf("the on-call build links %s", dep)
			}
		}
	}
	bin := filepath.Join(t.TempDir(), "hookline")
	if out, err := exec.Command("go", "build", "-tags", "oncall", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build -tags oncall: %v\n%s", err, out)
	}
	help, _ := exec.Command(bin, "--help").CombinedOutput()
	for _, want := range []string{"workload", "event", "dlq", "intake"} {
		if !strings.Contains(string(help), "  "+want+" ") {
			t.Errorf("the on-call build's help lacks %q:\n%s", want, help)
		}
	}
	for _, dev := range [][]string{{"run"}, {"lab"}, {"dev"}, {"dev", "clock", "advance", "720h"}, {"clock"}} {
		err := exec.Command(bin, dev...).Run()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitUsage {
			t.Errorf("hookline %s in the on-call build: %v, want the usage exit %d", strings.Join(dev, " "), err, exitUsage)
		}
	}
	// and nothing in it can move a clock: the local run's control path is
	// not in the binary at all
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte("/dev/clock")) || bytes.Contains(data, []byte(controlURLVarName)) {
		t.Error("the on-call build holds the local run's clock control")
	}
}

// controlURLVarName is the variable the developer build reads the local
// run's control endpoint from (controlURLVar, which the on-call build
// does not compile).
const controlURLVarName = "HOOKLINE_CONTROL_URL"

// TestDeveloperBuildHasTheHarnessCommands: the default build keeps run,
// lab and dev, which the README and make run use.
func TestDeveloperBuildHasTheHarnessCommands(t *testing.T) {
	root := newRoot()
	for _, name := range []string{"run", "lab", "dev", "workload"} {
		if c, _, err := root.Find([]string{name}); err != nil || c.Name() != name {
			t.Errorf("the developer build has no %q command: %v", name, err)
		}
	}
}
