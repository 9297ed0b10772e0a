package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/internal/ops"
)

// cliEnv starts local AWS and points the CLI's environment at it, as the
// endpoints file of `hookline run` does.
func cliEnv(t *testing.T) *localaws.Env {
	t.Helper()
	env := localaws.StartForTest(t)
	t.Setenv("AWS_ENDPOINT_URL_SQS", env.SQSEndpoint)
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", env.DynamoEndpoint)
	t.Setenv(ops.EnvFileVar, "")
	for _, q := range env.Template.Queues {
		t.Setenv(config.QueueURLVar(q.Name), env.QueueURL(q.Name))
	}
	for v, id := range map[string]string{"INTAKE_TABLE": "IntakeTable", "IDEMPOTENCY_TABLE": "IdempotencyTable",
		"LEDGER_TABLE": "LedgerTable", "WORKLOADS_TABLE": "WorkloadsTable"} {
		t.Setenv(v, env.TableName(id))
	}
	var errs bytes.Buffer
	old := stderr
	stderr = &errs
	t.Cleanup(func() {
		stderr = old
		if t.Failed() {
			t.Logf("stderr:\n%s", errs.String())
		}
	})
	return env
}

// run calls a command as main would and returns its exit code and output.
func run(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	code := dispatch(context.Background(), args, &out)
	return code, out.String()
}

func deadLetter(t *testing.T, env *localaws.Env, id string) {
	t.Helper()
	str := func(v string) sqstypes.MessageAttributeValue {
		return sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
	}
	_, err := env.SQS.SendMessage(context.Background(), &sqs.SendMessageInput{
		QueueUrl:    aws.String(env.QueueURL("payments-dlq")),
		MessageBody: aws.String(`{"id":"` + id + `","data":{"customer":"cus_1","amount":100,"currency":"usd"}}`),
		MessageAttributes: map[string]sqstypes.MessageAttributeValue{"source": str("payments"), "event_id": str(id),
			"failure_reason": str("provider_rejected"), "first_failure_reason": str("provider_rejected"), "receive_count": str("1")},
	})
	if err != nil {
		t.Fatal(err)
	}
}

func visible(t *testing.T, env *localaws.Env, queue string) int {
	t.Helper()
	out, err := env.SQS.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(env.QueueURL(queue)), AttributeNames: []sqstypes.QueueAttributeName{"ApproximateNumberOfMessages"},
	})
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(out.Attributes["ApproximateNumberOfMessages"])
	return n
}

func waitVisible(t *testing.T, env *localaws.Env, queue string, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for visible(t, env, queue) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%s never had %d visible", queue, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestDLQCommands(t *testing.T) {
	env := cliEnv(t)
	deadLetter(t, env, "evt_1")
	deadLetter(t, env, "evt_2")
	waitVisible(t, env, "payments-dlq", 2)
	steps := []struct {
		name     string
		args     []string
		wantCode int
		want     []string
	}{
		{name: "list", args: []string{"dlq", "list"}, want: []string{"payments-dlq", "payments", "usage-dlq"}},
		{name: "peek", args: []string{"dlq", "peek", "payments-dlq", "--max", "5"},
			want: []string{"evt_1", "evt_2", "provider_rejected", "payments:evt_1", "none", "all are visible again"}},
		{name: "dry run", args: []string{"dlq", "redrive", "payments-dlq", "--dry-run", "--skip-completed"},
			want: []string{"would move", "would move 2 to payments", "dry run: nothing changed"}},
		{name: "unknown queue", args: []string{"dlq", "peek", "nope"}, wantCode: exitUsage},
		{name: "source queue is not a dlq", args: []string{"dlq", "redrive", "payments"}, wantCode: exitUsage},
		{name: "native with max", args: []string{"dlq", "redrive", "payments-dlq", "--native", "--max", "1"}, wantCode: exitUsage},
		{name: "redrive one", args: []string{"dlq", "redrive", "payments-dlq", "--max", "1"}, want: []string{"moved 1 to payments"}},
		{name: "native", args: []string{"dlq", "redrive", "payments-dlq", "--native"}, want: []string{"COMPLETED"}},
		{name: "status", args: []string{"dlq", "status", "payments-dlq"}, want: []string{"COMPLETED"}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			code, out := run(t, s.args...)
			if code != s.wantCode {
				t.Fatalf("exit %d, want %d; output:\n%s", code, s.wantCode, out)
			}
			for _, w := range s.want {
				if !strings.Contains(out, w) {
					t.Fatalf("output lacks %q:\n%s", w, out)
				}
			}
		})
		if s.name == "dry run" && visible(t, env, "payments-dlq") != 2 {
			t.Fatal("the dry run changed the queue")
		}
	}
	// every message ended up on the source queue
	waitVisible(t, env, "payments", 2)
	waitVisible(t, env, "payments-dlq", 0)
}

func TestDLQListJSON(t *testing.T) {
	env := cliEnv(t)
	deadLetter(t, env, "evt_1")
	waitVisible(t, env, "payments-dlq", 1)
	code, out := run(t, "dlq", "list", "--json")
	var list []ops.DLQInfo
	if code != exitOK || json.Unmarshal([]byte(out), &list) != nil || len(list) != 2 {
		t.Fatalf("exit %d, output:\n%s", code, out)
	}
	if list[0].Name != "payments-dlq" || list[0].Depth != 1 || !list[0].AgeKnown {
		t.Fatalf("list %+v", list)
	}
}

func TestReplayCommand(t *testing.T) {
	env := cliEnv(t)
	store, err := intake.New(intake.Config{DynamoDB: env.DynamoDB, SQS: env.SQS, Table: env.TableName("IntakeTable")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = store.Accept(context.Background(), intake.Event{Source: "payments", EventID: "evt_r", QueueURL: env.QueueURL("payments"),
		Payload: []byte(`{"id":"evt_r"}`)})
	if err != nil {
		t.Fatal(err)
	}
	waitVisible(t, env, "payments", 1)
	steps := []struct {
		name     string
		args     []string
		wantCode int
		want     string
	}{
		{name: "by event", args: []string{"intake", "replay", "--source", "payments", "--event", "evt_r"}, want: "payments: sent 1, missing 0"},
		{name: "by time", args: []string{"intake", "replay", "--source", "payments", "--since", "10m"}, want: "payments: sent 1, missing 0"},
		{name: "missing is partial", args: []string{"intake", "replay", "--source", "payments", "--event", "evt_r,evt_gone"}, wantCode: exitPartial, want: "missing 1"},
		{name: "no mode", args: []string{"intake", "replay", "--source", "payments"}, wantCode: exitUsage},
		{name: "bad time", args: []string{"intake", "replay", "--source", "payments", "--since", "yesterday"}, wantCode: exitUsage},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			code, out := run(t, s.args...)
			if code != s.wantCode || !strings.Contains(out, s.want) {
				t.Fatalf("exit %d (want %d), output lacks %q:\n%s", code, s.wantCode, s.want, out)
			}
		})
	}
	// the first delivery plus three replays
	waitVisible(t, env, "payments", 4)
}

func TestWorkloadAndExplainCommands(t *testing.T) {
	cliEnv(t)
	steps := []struct {
		name     string
		args     []string
		wantCode int
		want     string
	}{
		{name: "create", args: []string{"workload", "create", "workload-7", "--owner", "team-images", "--routing-key", "R0UTE-SECRET", "--cap", "1000", "--step", "100"},
			want: "created: workload workload-7: status=active"},
		{name: "create again", args: []string{"workload", "create", "workload-7", "--owner", "o", "--routing-key", "r", "--cap", "1"}, wantCode: exitFailure},
		{name: "set cap", args: []string{"workload", "set-cap", "workload-7", "--cap", "1500"}, want: "set-cap: workload workload-7: cap 1000 -> 1500"},
		{name: "set cap json", args: []string{"workload", "set-cap", "workload-7", "--cap", "1600", "--json"}, want: `"cap": [
      1500,
      1600
    ]`},
		{name: "set step", args: []string{"workload", "set-step", "workload-7", "--step", "250"}, want: "step 100 -> 250"},
		{name: "set step to 0 is explicit", args: []string{"workload", "set-step", "workload-7", "--step", "0"}, want: "step 250 -> 0"},
		{name: "set hold", args: []string{"workload", "set-hold", "workload-7", "--hold", "true"}, want: "hold false -> true"},
		{name: "set hold again", args: []string{"workload", "set-hold", "workload-7", "--hold=true"}, want: "nothing changed"},
		{name: "unknown workload", args: []string{"workload", "set-cap", "workload-99", "--cap", "5"}, wantCode: exitFailure},
		{name: "alias", args: []string{"workload", "add-alias", "workload-7", "--ref", "img-prod"}, want: "img-prod is now attributed to workload workload-7"},
		{name: "resume an active one", args: []string{"workload", "resume", "workload-7"}, wantCode: exitFailure},
		{name: "list", args: []string{"workload", "list"}, want: "workload-7"},
		{name: "explain", args: []string{"workload", "explain", "workload-7"}, want: "1600"},
		{name: "explain json", args: []string{"workload", "explain", "workload-7", "--json"}, want: `"cap": 1600`},
		{name: "explain unknown event", args: []string{"event", "explain", "evt_none"}, wantCode: exitFailure},
		{name: "retire", args: []string{"workload", "retire", "workload-7"}, want: "status active -> retired"},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			code, out := run(t, s.args...)
			if code != s.wantCode || !strings.Contains(out, s.want) {
				t.Fatalf("exit %d (want %d), output lacks %q:\n%s", code, s.wantCode, s.want, out)
			}
			if strings.Contains(out, "R0UTE-SECRET") {
				t.Fatalf("the routing key was printed:\n%s", out)
			}
		})
	}
}

func TestFormatProgress(t *testing.T) {
	got := formatProgress("redrive payments-dlq", ops.Progress{Done: 120, Total: 500, Rate: 42.06, ETA: 9 * time.Second})
	if got != "redrive payments-dlq 120/500  42.1/s  ETA 9s" {
		t.Fatalf("got %q", got)
	}
	// and stderr in tests is no terminal: no progress line
	if newProgress("x") != nil {
		t.Fatal("progress on a non-terminal")
	}
}
