package ops_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/ops"
	"github.com/hookline/hookline/internal/reconcile"
	"github.com/hookline/hookline/internal/stack"
)

func TestResolverNames(t *testing.T) {
	tmpl, err := stack.LoadDefault()
	must(t, err)
	env := map[string]string{"LEDGER_TABLE": "prod-ledger", "QUEUE_URL_PAYMENTS_DLQ": "https://sqs.example/1/payments-dlq", "IDEMPOTENCY_NAMESPACE": ""}
	r, err := ops.NewResolver(ops.ResolverConfig{Template: tmpl, SQS: nilSQS{}, Lookup: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	must(t, err)
	tests := []struct {
		name, table, want string
	}{
		{name: "template name", table: "IntakeTable", want: "hookline-intake"},
		{name: "by TableName", table: "hookline-idempotency", want: "hookline-idempotency"},
		{name: "environment wins", table: "LedgerTable", want: "prod-ledger"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.Table(tt.table)
			if err != nil || got != tt.want {
				t.Fatalf("Table(%s) = %q, %v; want %q", tt.table, got, err, tt.want)
			}
		})
	}
	// the variables are the ones the functions read
	for id, v := range map[string]string{"IntakeTable": "INTAKE_TABLE", "IdempotencyTable": "IDEMPOTENCY_TABLE", "LedgerTable": "LEDGER_TABLE", "WorkloadsTable": "WORKLOADS_TABLE"} {
		if got := r.TableVars(id); len(got) != 1 || got[0] != v {
			t.Errorf("TableVars(%s) = %v, want [%s]", id, got, v)
		}
	}
	if _, err := r.Table("nope"); !errors.Is(err, ops.ErrUnknownTable) {
		t.Errorf("unknown table: %v", err)
	}
	// a queue URL from QUEUE_URL_<NAME> needs no AWS call
	if got, err := r.QueueURL(t.Context(), "payments-dlq"); err != nil || got != env["QUEUE_URL_PAYMENTS_DLQ"] {
		t.Errorf("QueueURL = %q, %v", got, err)
	}
	// the consumer's variables name the registry and the ledger
	if ns, ok := r.ConsumerVar("payments", "IDEMPOTENCY_NAMESPACE"); !ok || ns != "payments" {
		t.Errorf("payments namespace = %q, %t", ns, ok)
	}
	if tb, ok := r.ConsumerVar("usage", "LEDGER_TABLE"); !ok || tb != "prod-ledger" {
		t.Errorf("usage ledger = %q, %t", tb, ok)
	}
	dlq, src, err := r.DeadLetterQueue("usage-dlq")
	if err != nil || dlq.Name != "usage-dlq" || src.Name != "usage" {
		t.Errorf("DeadLetterQueue = %s, %s, %v", dlq.Name, src.Name, err)
	}
	if _, _, err := r.DeadLetterQueue("usage"); !errors.Is(err, ops.ErrNotDeadLetterQueue) {
		t.Errorf("source queue as DLQ: %v", err)
	}
}

// nilSQS fails every call: the resolver must not need it here.
type nilSQS struct{ ops.QueueLookupAPI }

func TestParseEnvFile(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		want    map[string]string
		wantErr bool
	}{
		{name: "plain", text: "AWS_ENDPOINT_URL_SQS=http://127.0.0.1:1\nAWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:2\n",
			want: map[string]string{"AWS_ENDPOINT_URL_SQS": "http://127.0.0.1:1", "AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:2"}},
		{name: "comments, export and quotes", text: "# written by hookline run\n\nexport A=\"x y\"\nB='z'\n",
			want: map[string]string{"A": "x y", "B": "z"}},
		{name: "not a pair", text: "just words\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ops.ParseEnvFile(strings.NewReader(tt.text))
			if tt.wantErr {
				if err == nil {
					t.Fatal("want an error")
				}
				return
			}
			must(t, err)
			if !equalMaps(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestLoadEnvFileKeepsTheEnvironment(t *testing.T) {
	// given an endpoints file and an environment that already sets SQS
	path := filepath.Join(t.TempDir(), "endpoints.env")
	must(t, os.WriteFile(path, []byte("AWS_ENDPOINT_URL_SQS=http://file-sqs\nAWS_ENDPOINT_URL_DYNAMODB=http://file-ddb\n"), 0o600))
	env := map[string]string{ops.EnvFileVar: path, "AWS_ENDPOINT_URL_SQS": "http://env-sqs"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	// when it is loaded
	got, err := ops.LoadEnvFile(lookup, func(k, v string) error { env[k] = v; return nil })
	must(t, err)
	// then only the unset variable comes from the file
	if got != path || env["AWS_ENDPOINT_URL_SQS"] != "http://env-sqs" || env["AWS_ENDPOINT_URL_DYNAMODB"] != "http://file-ddb" {
		t.Fatalf("loaded %q, env %v", got, env)
	}
	// and a named file that does not exist is an error, the default one is not
	env[ops.EnvFileVar] = filepath.Join(t.TempDir(), "missing.env")
	if _, err := ops.LoadEnvFile(lookup, func(string, string) error { return nil }); err == nil {
		t.Fatal("a missing HOOKLINE_ENV_FILE must fail")
	}
	delete(env, ops.EnvFileVar)
	t.Chdir(t.TempDir())
	if got, err := ops.LoadEnvFile(lookup, func(string, string) error { return nil }); err != nil || got != "" {
		t.Fatalf("no default file: %q, %v", got, err)
	}
}

func TestRunbookShowsIntervalChanges(t *testing.T) {
	at := time.Date(2026, 11, 30, 3, 20, 0, 0, time.UTC)
	r := ops.Runbook{IntervalChanges: []reconcile.IntervalChange{{
		WorkloadID: "workload-7", From: reconcile.TierActive, To: reconcile.TierNearCap,
		ToInterval: 5 * time.Minute, Reason: "total 850 is 85% of cap 1000", At: at,
	}}}
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	want := "2026-11-30T03:20:00Z  active -> near_cap, every 5m0s: total 850 is 85% of cap 1000"
	if !strings.Contains(b.String(), want) {
		t.Fatalf("runbook text lacks %q:\n%s", want, b.String())
	}
}
