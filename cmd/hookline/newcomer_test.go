//go:build !oncall

package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/internal/ops"
	"github.com/hookline/hookline/internal/spend"
)

// A newcomer's walk: the places where following the docs command by
// command went wrong.

// TestAMissingSecretIsAUsageErrorForEverySender: send-webhook and
// send-usage refuse a source without a secret the same way, as a usage
// error (exit 2), naming the variable to set.
func TestAMissingSecretIsAUsageErrorForEverySender(t *testing.T) {
	// given a directory without a local run and a source no secret is known for
	t.Chdir(t.TempDir())
	body := filepath.Join(t.TempDir(), "body.json")
	if err := os.WriteFile(body, []byte(`{"id":"evt_1"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOOKLINE_SHOP_NOKEY_SECRETS", "")
	for _, tc := range []struct {
		name string
		args []string
	}{
		{name: "send-webhook", args: []string{"dev", "send-webhook", "--source", "shop-nokey", "--file", body, "--url", "http://127.0.0.1:9"}},
		{name: "send-usage", args: []string{"dev", "send-usage", "--format", "cloudevents", "--source", "shop-nokey", "--type", "t", "--workload", "w", "--value", "1", "--url", "http://127.0.0.1:9"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// when it is sent
			code, _, errOut := execute(t, tc.args...)
			// then it is a usage error naming the variable
			if code != exitUsage {
				t.Errorf("exit %d, want %d (usage); stderr:\n%s", code, exitUsage, errOut)
			}
			if !strings.Contains(errOut, `no secret for source "shop-nokey": pass --secret or set $HOOKLINE_SHOP_NOKEY_SECRETS`) {
				t.Errorf("stderr does not name the secret's variable:\n%s", errOut)
			}
		})
	}
	// and both helps say so
	for _, path := range [][]string{{"dev", "send-webhook", "--help"}, {"dev", "send-usage", "--help"}} {
		_, out, _ := execute(t, path...)
		if !strings.Contains(strings.Join(strings.Fields(out), " "), "no secret is a usage error (exit 2)") {
			t.Errorf("hookline %s does not say a missing secret exits 2:\n%s", strings.Join(path, " "), out)
		}
	}
}

// TestCreatePrintsTheWorkloadOnce: a new workload is printed on one line,
// as the docs show it; a change prints the workload as it now is after
// the fields that changed.
func TestCreatePrintsTheWorkloadOnce(t *testing.T) {
	w := spend.Workload{ID: "workload-7", Owner: "images-team", Cap: 1000, Status: spend.StatusActive}
	var out strings.Builder
	printChange(&out, "created", nil, w, false)
	if got, want := out.String(), "created: workload workload-7: status=active, owner=images-team, cap=1000, step=0, hold=false, cap_epoch=0, escalation_level=0\n"; got != want {
		t.Errorf("create printed\n%q\nwant\n%q", got, want)
	}
	out.Reset()
	after := w
	after.Cap = 1500
	printChange(&out, "set-cap", &w, after, false)
	if !strings.Contains(out.String(), "\nnow: status=active owner=images-team total=0 cap=1500") {
		t.Errorf("set-cap printed no now: line:\n%s", out.String())
	}
}

// TestPeekSaysAReasonOnce: a dead letter's row names its reason once:
// a last failure equal to the first reads "same", and a status whose
// check failed for the reason the message failed for does not repeat it.
func TestPeekSaysAReasonOnce(t *testing.T) {
	reason := "malformed_message: data.amount: not an integer"
	m := ops.Message{EventID: "evt_1", Source: "payments", ReceiveCount: 3, FirstFailureReason: reason, FailureReason: reason,
		Status: ops.Status{State: ops.StateUnknown, Error: "data.amount: not an integer"}}
	row := peekRow(m)
	if n := strings.Count(row, "not an integer"); n != 1 {
		t.Errorf("the row names the reason %d times, want once:\n%s", n, row)
	}
	if !strings.Contains(row, "\tsame\t") || !strings.HasSuffix(row, "\tn/a") {
		t.Errorf("the row does not read first reason, same, n/a:\n%s", row)
	}
	// A check that failed for a reason of its own still says it.
	m.Status.Error = "throttled"
	if row := peekRow(m); !strings.HasSuffix(row, "\tn/a (throttled)") {
		t.Errorf("the check's own error is lost:\n%s", row)
	}
}

// TestMakeRunPassesRunFlags: `make run RUN_FLAGS=...` hands its flags to
// `hookline run`, and `make run` alone still runs it as documented.
func TestMakeRunPassesRunFlags(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	for _, tc := range []struct{ flags, want string }{
		{flags: "RUN_FLAGS=--paypal-certs-addr 127.0.0.1:9443", want: "exec ./bin/hookline run --paypal-certs-addr 127.0.0.1:9443"},
		{want: "exec ./bin/hookline run"},
	} {
		args := []string{"-n", "-C", repoRoot, "run"}
		if tc.flags != "" {
			args = append(args, tc.flags)
		}
		out, err := exec.Command("make", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("make %v: %v\n%s", args, err, out)
		}
		var last string
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if strings.Contains(line, "bin/hookline run") {
				last = strings.TrimSpace(line)
			}
		}
		if last != tc.want {
			t.Errorf("make %v runs %q, want %q", args, last, tc.want)
		}
	}
}

// awsChoiceVars are the variables that choose an AWS account or endpoint.
var awsChoiceVars = []string{"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
	"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_WEB_IDENTITY_TOKEN_FILE",
	"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "HOOKLINE_API_URL", ops.EnvFileVar}

// TestWithoutALocalRunCommandsSayHowToStartOne: in the developer build,
// with no endpoints file and no AWS chosen in the environment, a command
// says how to start a local run instead of reaching for the credential
// chain (and the instance metadata service), and the HTTP API's command
// says so instead of a refused connection.
func TestWithoutALocalRunCommandsSayHowToStartOne(t *testing.T) {
	// given a directory where no local run is up, and no AWS chosen
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("HOME", dir)
	for _, v := range awsChoiceVars {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	for _, args := range [][]string{
		{"workload", "list"},
		{"dlq", "list"},
		{"event", "explain", "evt_1", "--source", "payments"},
		{"workload", "admission", "workload-7"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			// when a command runs
			code, _, errOut := execute(t, args...)
			// then it fails saying how to start a local run, and nothing else
			if code != exitFailure {
				t.Errorf("exit %d, want %d", code, exitFailure)
			}
			if !strings.Contains(errOut, "no local run found: start one with `make run` (or `hookline run`), or ") {
				t.Errorf("stderr does not say how to start a local run:\n%s", errOut)
			}
			if strings.Contains(errOut, "IMDS") || strings.Contains(errOut, "EC2") {
				t.Errorf("stderr speaks of the instance metadata service:\n%s", errOut)
			}
		})
	}
}

// TestTheLocalRunRule: what counts as a local run, or AWS chosen on
// purpose, for the developer build.
func TestTheLocalRunRule(t *testing.T) {
	for _, tc := range []struct {
		name    string
		envFile string
		env     map[string]string
		ok      bool
	}{
		{name: "nothing", ok: false},
		{name: "an endpoints file", envFile: ops.DefaultEnvFile, ok: true},
		{name: "an endpoint", env: map[string]string{"AWS_ENDPOINT_URL": "http://127.0.0.1:4566"}, ok: true},
		{name: "an SQS endpoint", env: map[string]string{"AWS_ENDPOINT_URL_SQS": "http://127.0.0.1:4566"}, ok: true},
		{name: "a profile", env: map[string]string{"AWS_PROFILE": "prod"}, ok: true},
		{name: "keys", env: map[string]string{"AWS_ACCESS_KEY_ID": "AKIA"}, ok: true},
		{name: "a web identity", env: map[string]string{"AWS_WEB_IDENTITY_TOKEN_FILE": "/t"}, ok: true},
		{name: "a region alone", env: map[string]string{"AWS_REGION": "eu-west-1"}, ok: false},
		{name: "an empty profile", env: map[string]string{"AWS_PROFILE": ""}, ok: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lookup := func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
			err := localRunRule(tc.envFile, lookup)
			if (err == nil) != tc.ok {
				t.Errorf("localRunRule = %v, want ok %v", err, tc.ok)
			}
		})
	}
}

// TestEventExplainOfAPaymentEvent: a payment event has no ledger entry;
// event explain says what the payments intake and the payment worker's
// idempotency record hold of it, and where to look next, rather than
// only that the ledger and the usage intake know nothing of it.
func TestEventExplainOfAPaymentEvent(t *testing.T) {
	env := cliEnv(t)
	ctx := context.Background()
	// given a payment event the door accepted, which no worker has acted on
	store, err := intake.New(intake.Config{DynamoDB: env.DynamoDB, SQS: env.SQS, Table: env.TableName("IntakeTable")})
	if err != nil {
		t.Fatal(err)
	}
	body := `{"id":"evt_pay_1","type":"payment.requested","data":{"customer":"cus_1","amount":100,"currency":"usd"}}`
	if _, err := store.Accept(ctx, intake.Event{Source: "payments", EventID: "evt_pay_1", QueueURL: env.QueueURL("payments"),
		Payload: []byte(body)}); err != nil {
		t.Fatal(err)
	}
	// when it is explained
	code, out := run(t, "event", "explain", "evt_pay_1")
	t.Logf("event explain:\n%s", out)
	// then the answer names the intake record, the key and the next commands
	if code != exitOK {
		t.Errorf("exit %d, want 0", code)
	}
	for _, want := range []string{
		"event evt_pay_1 of source payments: received ",
		"payment key ...: none",
		"hookline dlq peek payments-dlq",
		"hookline intake replay --source payments --event evt_pay_1",
	} {
		if miss := matchInOrder(out, []string{"..." + want + "..."}); miss != "" {
			t.Errorf("event explain lacks %q:\n%s", want, out)
		}
	}
	// and an event nobody received points to the DLQs and the intake
	code, _, errOut := execute(t, "event", "explain", "evt_nobody")
	if code != exitFailure || !strings.Contains(errOut, "hookline dlq peek") || !strings.Contains(errOut, "payments") {
		t.Errorf("exit %d; an unknown event does not point to the DLQs and the payments intake:\n%s", code, errOut)
	}
}

// TestABusyPayPalPortSaysHowToPinAnother: when the PayPal certificate
// double's default port is busy, the run says how to choose another, in
// cert_hosts and through make run.
func TestABusyPayPalPortSaysHowToPinAnother(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var out strings.Builder
	if got := paypalCertsAddr(&out, ln.Addr().String(), false); got != "127.0.0.1:0" {
		t.Errorf("a busy default gives %s, want a free port", got)
	}
	if !strings.Contains(out.String(), `make run RUN_FLAGS="--paypal-certs-addr 127.0.0.1:PORT"`) {
		t.Errorf("the run does not say how to pin another port:\n%s", out.String())
	}
}
