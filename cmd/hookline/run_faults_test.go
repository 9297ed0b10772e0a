//go:build !oncall

package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/dev/localaws"
)

// TestRunRefusesBadFaults: a bad HOOKLINE_LOCAL_AWS_FAULTS is refused at
// start with exit 2 and a message naming the pair.
func TestRunRefusesBadFaults(t *testing.T) {
	for _, bad := range []string{"seed=7,ddb-ambiguous=2", "ddb-sometimes=0.1", "seed=x"} {
		t.Setenv(localaws.FaultsEnv, bad)
		code, _, errOut := execute(t, "run", "--addr", "127.0.0.1:0")
		pair := bad[strings.LastIndex(bad, ",")+1:]
		if code != exitUsage || !strings.Contains(errOut, pair) {
			t.Errorf("%s=%s: exit %d, stderr %q; want %d naming %q", localaws.FaultsEnv, bad, code, errOut, exitUsage, pair)
		}
	}
}

// TestRunPrintsFaultCounts: with faults on, the counts so far are printed
// on a `local aws faults:` line at every interval and once more at stop.
func TestRunPrintsFaultCounts(t *testing.T) {
	env := localaws.StartFaultsForTest(t, localaws.Faults{Seed: 1, Rates: map[string]float64{localaws.FaultDDBError: 1, localaws.FaultSQSDuplicate: 0.5}})
	var out syncBuffer
	stop := printFaults(&out, env, 50*time.Millisecond)
	env.DynamoDB.PutItem(context.Background(), &dynamodb.PutItemInput{
		TableName: aws.String(env.TableName("IdempotencyTable")),
		Item:      map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "k"}},
	}, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
	time.Sleep(120 * time.Millisecond)
	stop()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) < 2 {
		t.Fatalf("printed %q, want a line per interval and one at stop", out.String())
	}
	last := lines[len(lines)-1]
	if last != "local aws faults: ddb-error=1 sqs-duplicate=0" {
		t.Errorf("last line = %q", last)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "local aws faults: ") {
			t.Errorf("line %q does not begin with `local aws faults:`", l)
		}
	}
}

// TestRunPrintsNoFaultsWhenOff: without faults nothing is printed.
func TestRunPrintsNoFaultsWhenOff(t *testing.T) {
	env := localaws.StartForTest(t)
	var out syncBuffer
	stop := printFaults(&out, env, time.Millisecond)
	time.Sleep(10 * time.Millisecond)
	stop()
	if out.String() != "" {
		t.Errorf("printed %q with faults off", out.String())
	}
}
