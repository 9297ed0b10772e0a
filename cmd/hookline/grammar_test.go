package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// grammar lists every leaf command with a minimal valid command line and the
// flags it requires. No case here reaches AWS: each is refused, or prints
// help, before the command runs.
var grammar = []struct {
	path     string   // the command path after "hookline"
	args     []string // positional arguments of a valid call
	required []string // required flags with a valid value, as "--name=value"
}{
	{path: "run"},
	{path: "lab"},
	{path: "lab serve"},
	{path: "dev send-webhook", required: []string{"--source=payments", "--file=testdata/x.json"}},
	{path: "dev send-usage", required: []string{"--workload=img-resize", "--units=400"}},
	{path: "dev clock advance", args: []string{"720h"}},
	{path: "dev clock set", args: []string{"2027-01-01T08:00:00Z"}},
	{path: "workload create", args: []string{"workload-7"}, required: []string{"--owner=o", "--routing-key=r", "--cap=1000"}},
	{path: "workload list"},
	{path: "workload check"},
	{path: "workload explain", args: []string{"workload-7"}},
	{path: "workload set-cap", args: []string{"workload-7"}, required: []string{"--cap=1500"}},
	{path: "workload set-step", args: []string{"workload-7"}, required: []string{"--step=100"}},
	{path: "workload set-hold", args: []string{"workload-7"}, required: []string{"--hold=true"}},
	{path: "workload set-period", args: []string{"workload-7"}, required: []string{"--period=month"}},
	{path: "workload add-alias", args: []string{"workload-7"}, required: []string{"--ref=img"}},
	{path: "workload retire", args: []string{"workload-7"}},
	{path: "workload resume", args: []string{"workload-7"}},
	{path: "workload admission", args: []string{"workload-7"}},
	{path: "event explain", args: []string{"evt_1"}},
	{path: "dlq list"},
	{path: "dlq peek", args: []string{"payments-dlq"}},
	{path: "dlq redrive", args: []string{"payments-dlq"}},
	{path: "dlq status", args: []string{"payments-dlq"}},
	{path: "intake replay", required: []string{"--source=payments", "--event=evt_1"}},
	{path: "completion bash"},
	{path: "completion zsh"},
	{path: "completion fish"},
	{path: "completion powershell"},
}

// execute runs a command line and returns its exit code, stdout and stderr.
func execute(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	old := stderr
	stderr = &errOut
	defer func() { stderr = old }()
	code := dispatch(context.Background(), args, &out)
	return code, out.String(), errOut.String()
}

// leaves returns the path of every runnable command without subcommands.
func leaves(c *cobra.Command) []string {
	var out []string
	for _, sub := range c.Commands() {
		if sub.Name() == "help" {
			continue
		}
		if sub.HasSubCommands() {
			out = append(out, leaves(sub)...)
			continue
		}
		out = append(out, strings.TrimPrefix(sub.CommandPath(), "hookline "))
	}
	return out
}

// TestGrammarCoversEveryCommand: a new subcommand cannot skip the grammar
// test.
func TestGrammarCoversEveryCommand(t *testing.T) {
	var listed []string
	for _, g := range grammar {
		listed = append(listed, g.path)
	}
	for _, leaf := range leaves(newRoot()) {
		if !slices.Contains(listed, leaf) {
			t.Errorf("hookline %s is not in the grammar table", leaf)
		}
	}
}

func TestGrammar(t *testing.T) {
	t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1") // anything that ran would fail, not reach AWS
	for _, g := range grammar {
		path := strings.Fields(g.path)
		t.Run(g.path, func(t *testing.T) {
			for _, helpArgs := range [][]string{
				append(slices.Clone(path), "--help"),
				append(slices.Clone(path), "-h"),
				append([]string{"help"}, path...),
			} {
				// given a request for help, when it runs, then it exits 0
				// with this command's own usage line on stdout
				code, out, errOut := execute(t, helpArgs...)
				if code != exitOK {
					t.Fatalf("%v: exit %d, want 0; stderr: %s", helpArgs, code, errOut)
				}
				if !strings.Contains(out, "hookline "+g.path) || !strings.Contains(out, "Usage:") {
					t.Fatalf("%v: not the command's own help:\n%s", helpArgs, out)
				}
			}
			if path[0] == "completion" {
				// completion scripts are printed, and refuse unknown flags
				code, out, _ := execute(t, path...)
				if code != exitOK || len(out) < 100 {
					t.Fatalf("%v: exit %d, %d bytes", path, code, len(out))
				}
				if code, _, _ := execute(t, append(slices.Clone(path), "--bogus")...); code != exitUsage {
					t.Fatalf("unknown flag: exit %d, want %d", code, exitUsage)
				}
				return
			}
			valid := append(append(slices.Clone(path), g.args...), g.required...)
			// an unknown flag is refused with exit 2, before anything runs
			code, _, errOut := execute(t, append(slices.Clone(valid), "--bogus-flag=1")...)
			if code != exitUsage || !strings.Contains(errOut, "unknown flag") {
				t.Fatalf("unknown flag: exit %d, stderr %q; want %d and 'unknown flag'", code, errOut, exitUsage)
			}
			// a flag of another command is unknown here too
			if !slices.Contains([]string{"workload create", "dev send-usage", "dev send-webhook", "intake replay"}, g.path) {
				code, _, _ = execute(t, append(slices.Clone(valid), "--owner=o")...)
				if code != exitUsage {
					t.Fatalf("another command's flag: exit %d, want %d", code, exitUsage)
				}
			}
			// each missing required flag is refused with exit 2
			for i, req := range g.required {
				without := append(append(slices.Clone(path), g.args...), slices.Delete(slices.Clone(g.required), i, i+1)...)
				code, _, errOut := execute(t, without...)
				name := strings.SplitN(strings.TrimPrefix(req, "--"), "=", 2)[0]
				if code != exitUsage || !strings.Contains(errOut, name) {
					t.Fatalf("without %s: exit %d, stderr %q; want %d naming the flag", req, code, errOut, exitUsage)
				}
			}
			// a missing or extra positional argument is refused with exit 2
			if len(g.args) > 0 {
				code, _, _ = execute(t, append(slices.Clone(path), g.required...)...)
				if code != exitUsage {
					t.Fatalf("without its argument: exit %d, want %d", code, exitUsage)
				}
			}
			code, _, _ = execute(t, append(slices.Clone(valid), "extra-argument")...)
			if code != exitUsage {
				t.Fatalf("with an extra argument: exit %d, want %d", code, exitUsage)
			}
		})
	}
}

// TestGrammarRefusesAmbiguousInput covers the values and combinations that
// parse but must not run.
func TestGrammarRefusesAmbiguousInput(t *testing.T) {
	t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
	for _, tc := range []struct {
		name string
		args []string
	}{
		{name: "set-step without a value", args: []string{"workload", "set-step", "w1", "--step"}},
		{name: "set-hold without a value", args: []string{"workload", "set-hold", "w1", "--hold"}},
		{name: "set-hold with a non-boolean", args: []string{"workload", "set-hold", "w1", "--hold", "yes"}},
		{name: "set-cap zero", args: []string{"workload", "set-cap", "w1", "--cap", "0"}},
		{name: "set-step negative", args: []string{"workload", "set-step", "w1", "--step=-1"}},
		{name: "retire with a cap", args: []string{"workload", "retire", "w1", "--cap", "5"}},
		{name: "two workloads", args: []string{"workload", "resume", "w1", "w2"}},
		{name: "replay by event and time", args: []string{"intake", "replay", "--source", "payments", "--event", "e", "--since", "1h"}},
		{name: "replay without a mode", args: []string{"intake", "replay", "--source", "payments"}},
		{name: "replay until before since", args: []string{"intake", "replay", "--source", "payments", "--since", "1h", "--until", "2h"}},
		{name: "native redrive with skip-completed", args: []string{"dlq", "redrive", "payments-dlq", "--native", "--skip-completed"}},
		{name: "no-wait without native", args: []string{"dlq", "redrive", "payments-dlq", "--no-wait"}},
		{name: "unknown subcommand", args: []string{"dlq", "purge"}},
		{name: "unknown command", args: []string{"send-webhook"}},
		{name: "lab with a negative GOGC", args: []string{"lab", "--gogc=-1"}},
		{name: "lab with a negative warm-up", args: []string{"lab", "--warmup=-1s"}},
		{name: "lab with a negative payload size", args: []string{"lab", "--payload-size=-1"}},
		{name: "lab with a negative plan rate", args: []string{"lab", "--plan-rate=-1"}},
		{name: "lab suite payload without the suite", args: []string{"lab", "--suite-payload", "testdata/payloads/stripe-invoice-finalized.json"}},
		{name: "lab with a payload it cannot read", args: []string{"lab", "--payload", "no-such-body.json"}},
		{name: "lab with a payload the worker cannot charge", args: []string{"lab", "--payload", "../../testdata/payloads/README.md"}},
		{name: "drop and alter", args: []string{"dev", "send-usage", "--workload", "w", "--units", "1", "--drop-webhook", "--webhook-units", "2"}},
		{name: "usage without units", args: []string{"dev", "send-usage", "--workload", "w"}},
		{name: "usage in an unknown format", args: []string{"dev", "send-usage", "--workload", "w", "--format", "csv"}},
		{name: "a batch of usage.recorded", args: []string{"dev", "send-usage", "--workload", "w", "--units", "1", "--batch", "3"}},
		{name: "cloudevents with units", args: []string{"dev", "send-usage", "--format", "cloudevents", "--workload", "w", "--value", "1", "--units", "1"}},
		{name: "cloudevents without a value", args: []string{"dev", "send-usage", "--format", "cloudevents", "--workload", "w"}},
		{name: "cloudevents with a negative batch", args: []string{"dev", "send-usage", "--format", "cloudevents", "--workload", "w", "--value", "1", "--batch=-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := execute(t, tc.args...)
			if code != exitUsage {
				t.Fatalf("exit %d, want %d; stderr %s", code, exitUsage, errOut)
			}
		})
	}
}

func TestGroupsAloneShowTheirHelp(t *testing.T) {
	for _, g := range []string{"workload", "dlq", "intake", "event", "dev"} {
		code, out, _ := execute(t, g)
		if code != exitOK || !strings.Contains(out, "hookline "+g+" [command]") {
			t.Fatalf("hookline %s: exit %d\n%s", g, code, out)
		}
	}
}
