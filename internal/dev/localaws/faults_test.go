package localaws_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/hookline/hookline/internal/awsconf"
	"github.com/hookline/hookline/internal/dev/localaws"
)

func TestParseFaults(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    string // Faults.String of the result
		badPair string // the pair the error must name
	}{
		{name: "empty", in: "", want: "seed=0"},
		{name: "issue example", in: "seed=7,ddb-ambiguous=0.005,ddb-error=0.005,ddb-throttle=0.005,sqs-send-ambiguous=0.005,sqs-duplicate=0.01",
			want: "seed=7,ddb-ambiguous=0.005,ddb-error=0.005,ddb-throttle=0.005,sqs-send-ambiguous=0.005,sqs-duplicate=0.01"},
		{name: "spaces and bounds", in: " sqs-delete-lost=1 , ddb-error=0 ", want: "seed=0,ddb-error=0,sqs-delete-lost=1"},
		{name: "unknown name", in: "seed=1,ddb-slow=0.1", badPair: `"ddb-slow=0.1"`},
		{name: "rate above one", in: "ddb-error=1.5", badPair: `"ddb-error=1.5"`},
		{name: "negative rate", in: "ddb-error=-0.1", badPair: `"ddb-error=-0.1"`},
		{name: "rate not a number", in: "ddb-error=often", badPair: `"ddb-error=often"`},
		{name: "NaN rate", in: "ddb-error=NaN", badPair: `"ddb-error=NaN"`},
		{name: "negative seed", in: "seed=-3", badPair: `"seed=-3"`},
		{name: "no equals", in: "ddb-error", badPair: `"ddb-error"`},
		{name: "given twice", in: "ddb-error=0.1,ddb-error=0.2", badPair: `"ddb-error=0.2"`},
		{name: "trailing comma", in: "ddb-error=0.1,", badPair: `""`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := localaws.ParseFaults(tt.in)
			if tt.badPair == "" {
				if err != nil {
					t.Fatalf("ParseFaults(%q): %v", tt.in, err)
				}
				if got := f.String(); got != tt.want {
					t.Errorf("ParseFaults(%q) = %s, want %s", tt.in, got, tt.want)
				}
				return
			}
			if !errors.Is(err, localaws.ErrBadFaults) {
				t.Fatalf("ParseFaults(%q) error = %v, want ErrBadFaults", tt.in, err)
			}
			if !strings.Contains(err.Error(), tt.badPair) {
				t.Errorf("error %q does not name the pair %s", err, tt.badPair)
			}
		})
	}
}

func TestStartRefusesBadFaultsOnlyWhenAsked(t *testing.T) {
	t.Setenv(localaws.FaultsEnv, "ddb-error=2")
	// Given a bad value in the shell, when a run does not ask for env
	// faults, then it starts with the layer off.
	env := localaws.StartForTest(t)
	if env.FaultsOn() {
		t.Fatal("fault layer on without Options.FaultsFromEnv")
	}
	// When a run asks, then it refuses to start, naming the pair.
	_, err := localaws.Start(context.Background(), localaws.Options{FaultsFromEnv: true})
	if !errors.Is(err, localaws.ErrBadFaults) || !strings.Contains(err.Error(), "ddb-error=2") {
		t.Fatalf("Start with a bad %s = %v, want ErrBadFaults naming the pair", localaws.FaultsEnv, err)
	}
}

// putDrill writes n distinct items (prefix-0, prefix-1, ...) to table with
// one attempt each and reports how each answered.
func putDrill(t *testing.T, client *dynamodb.Client, table, prefix string, n int) (errs []error) {
	t.Helper()
	for i := range n {
		_, err := client.PutItem(context.Background(), &dynamodb.PutItemInput{
			TableName: aws.String(table),
			Item:      map[string]ddbtypes.AttributeValue{"pk": str(fmt.Sprintf("%s-%d", prefix, i))},
		}, noRetry)
		errs = append(errs, err)
	}
	return errs
}

func noRetry(o *dynamodb.Options) { o.RetryMaxAttempts = 1 }

func itemExists(t *testing.T, client *dynamodb.Client, table, pk string) bool {
	t.Helper()
	out, err := client.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(table), Key: map[string]ddbtypes.AttributeValue{"pk": str(pk)}, ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatalf("get %s: %v", pk, err)
	}
	return len(out.Item) > 0
}

func TestDynamoDBFaultsThroughTheSDK(t *testing.T) {
	tests := []struct {
		fault     string
		wantCode  string
		committed bool
	}{
		{fault: localaws.FaultDDBError, wantCode: "InternalServerError", committed: false},
		{fault: localaws.FaultDDBThrottle, wantCode: "ProvisionedThroughputExceededException", committed: false},
		{fault: localaws.FaultDDBAmbiguous, committed: true},
	}
	for _, tt := range tests {
		t.Run(tt.fault, func(t *testing.T) {
			env := localaws.StartFaultsForTest(t, localaws.Faults{Seed: 7, Rates: map[string]float64{tt.fault: 1}})
			table := env.TableName("IdempotencyTable")
			// Both doors: the in-process client and the HTTP port.
			clients := map[string]*dynamodb.Client{
				"in-process": env.DynamoDB,
				"http":       awsconf.DynamoDB(env.Config, env.DynamoEndpoint),
			}
			for door, client := range clients {
				var answered500, dropped int
				for i, err := range putDrill(t, client, table, door, 12) {
					if err == nil {
						t.Fatalf("%s: put %d succeeded under %s=1", door, i, tt.fault)
					}
					if got := itemExists(t, client, table, fmt.Sprintf("%s-%d", door, i)); got != tt.committed {
						t.Errorf("%s: put %d committed = %v, want %v (err %v)", door, i, got, tt.committed, err)
					}
					if tt.fault == localaws.FaultDDBThrottle {
						checkThrottleReason(t, err, table)
					}
					switch code := errorCode(err); {
					case tt.wantCode != "" && code != tt.wantCode:
						t.Errorf("%s: put %d error code %q, want %q (%v)", door, i, code, tt.wantCode, err)
					case code == "InternalServerError":
						answered500++
					case code == "":
						dropped++
					}
				}
				if tt.fault == localaws.FaultDDBAmbiguous && (answered500 == 0 || dropped == 0) {
					t.Errorf("%s: ambiguous writes answered 500 %d times and dropped %d times; want both", door, answered500, dropped)
				}
			}
			if got := env.Faults()[tt.fault]; got < 24 {
				t.Errorf("Faults()[%s] = %d, want at least 24", tt.fault, got)
			}
		})
	}
}

// checkThrottleReason checks a throttle carries DynamoDB's throttling
// reason for a partition key over its limit, naming the table.
func checkThrottleReason(t *testing.T, err error, table string) {
	t.Helper()
	var pte *ddbtypes.ProvisionedThroughputExceededException
	if !errors.As(err, &pte) || len(pte.ThrottlingReasons) != 1 {
		t.Fatalf("throttle %v carries no throttling reason", err)
	}
	r := pte.ThrottlingReasons[0]
	if aws.ToString(r.Reason) != "TableWriteKeyRangeThroughputExceeded" || !strings.HasSuffix(aws.ToString(r.Resource), ":table/"+table) {
		t.Errorf("throttling reason %s on %s, want TableWriteKeyRangeThroughputExceeded on table/%s", aws.ToString(r.Reason), aws.ToString(r.Resource), table)
	}
}

func TestAmbiguousPutRetriedBySDKMeetsItsOwnWrite(t *testing.T) {
	// Given a put whose first attempt commits and answers 500, when the
	// SDK retries it, then the retry's condition fails on the write the
	// first attempt made: the hazard the callers must recognise.
	env := localaws.StartFaultsForTest(t, localaws.Faults{Seed: 1, Rates: map[string]float64{localaws.FaultDDBAmbiguous: 1},
		Match: localaws.FirstAttempt(localaws.FaultDDBAmbiguous, "PutItem")})
	_, err := env.DynamoDB.PutItem(context.Background(), &dynamodb.PutItemInput{
		TableName:           aws.String(env.TableName("IdempotencyTable")),
		Item:                map[string]ddbtypes.AttributeValue{"pk": str("mine")},
		ConditionExpression: aws.String("attribute_not_exists(pk)"),
	})
	var ccf *ddbtypes.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		t.Fatalf("retried put = %v, want ConditionalCheckFailedException", err)
	}
	if got := env.Faults()[localaws.FaultDDBAmbiguous]; got != 1 {
		t.Errorf("ambiguous faults = %d, want 1 (the retry is a new draw)", got)
	}
}

func TestFaultDecisionsReplayBySeed(t *testing.T) {
	run := func(seed uint64) []bool {
		env := localaws.StartFaultsForTest(t, localaws.Faults{Seed: seed, Rates: map[string]float64{localaws.FaultDDBError: 0.5}})
		var hits []bool
		for _, err := range putDrill(t, env.DynamoDB, env.TableName("IdempotencyTable"), "seeded", 40) {
			hits = append(hits, err != nil)
		}
		return hits
	}
	a, b, c := run(11), run(11), run(12)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("same seed, different faults:\n%v\n%v", a, b)
	}
	if fmt.Sprint(a) == fmt.Sprint(c) {
		t.Errorf("seeds 11 and 12 injected the same 40 faults: %v", a)
	}
	n := 0
	for _, hit := range a {
		if hit {
			n++
		}
	}
	if n < 8 || n > 32 {
		t.Errorf("rate 0.5 faulted %d of 40 writes", n)
	}
}

func TestRetryDrawsAfresh(t *testing.T) {
	// Given rate 0.5 for every attempt, when each write may be tried three
	// times, then far fewer than half fail: attempt 2 and 3 are new draws
	// (about 1 in 8 fails all three).
	env := localaws.StartFaultsForTest(t, localaws.Faults{Seed: 3, Rates: map[string]float64{localaws.FaultDDBError: 0.5}})
	table := env.TableName("IdempotencyTable")
	failed := 0
	for i := range 80 {
		_, err := env.DynamoDB.PutItem(context.Background(), &dynamodb.PutItemInput{
			TableName: aws.String(table), Item: map[string]ddbtypes.AttributeValue{"pk": str(fmt.Sprintf("retry-%d", i))},
		}, func(o *dynamodb.Options) { o.RetryMaxAttempts = 3; o.Retryer = noBackoff(o.Retryer) })
		if err != nil {
			failed++
		}
	}
	if failed > 24 {
		t.Errorf("%d of 80 writes failed all 3 attempts at rate 0.5; retries are not drawn afresh", failed)
	}
	if got := env.Faults()[localaws.FaultDDBError]; got < 40 {
		t.Errorf("only %d faults injected over 80 writes at rate 0.5", got)
	}
}

// noBackoff keeps a retryer's decisions and drops its waits, so retry
// tests stay fast.
func noBackoff(r aws.Retryer) aws.Retryer { return zeroDelay{r} }

type zeroDelay struct{ aws.Retryer }

func (zeroDelay) RetryDelay(int, error) (time.Duration, error) { return 0, nil }

func (z zeroDelay) GetRetryToken(ctx context.Context, err error) (func(error) error, error) {
	return func(error) error { return nil }, nil
}

func TestSQSSendAmbiguousEnqueues(t *testing.T) {
	t.Parallel() // waits out SQS timeouts on its own local AWS
	env := localaws.StartFaultsForTest(t, localaws.Faults{Seed: 5, Rates: map[string]float64{localaws.FaultSQSSendAmbiguous: 1}})
	url := env.QueueURL("payments")
	_, err := env.SQS.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("one")},
		func(o *sqs.Options) { o.RetryMaxAttempts = 1 })
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("send under sqs-send-ambiguous=1 = %v, want a 500", err)
	}
	_, err = env.SQS.SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: []sqstypes.SendMessageBatchRequestEntry{
		{Id: aws.String("a"), MessageBody: aws.String("two")},
	}}, func(o *sqs.Options) { o.RetryMaxAttempts = 1 })
	if err == nil {
		t.Fatal("batch send under sqs-send-ambiguous=1 succeeded")
	}
	got := receiveBodies(t, env, url, 0, 2)
	if got["one"] != 1 || got["two"] != 1 {
		t.Errorf("queue holds %v after two ambiguous sends, want one and two once each", got)
	}
	if n := env.Faults()[localaws.FaultSQSSendAmbiguous]; n != 2 {
		t.Errorf("Faults()[sqs-send-ambiguous] = %d, want 2", n)
	}
}

// receiveBodies receives until it has want messages or 3 s pass, deleting
// each, and counts them by body. visibility 0 keeps the queue's.
func receiveBodies(t *testing.T, env *localaws.Env, url string, visibility int32, want int) map[string]int {
	t.Helper()
	got := map[string]int{}
	deadline := time.Now().Add(3 * time.Second)
	for n := 0; n < want && time.Now().Before(deadline); {
		out, err := env.SQS.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: visibility,
			MessageAttributeNames: []string{"All"},
		})
		if err != nil {
			t.Fatalf("receive: %v", err)
		}
		for _, m := range out.Messages {
			got[aws.ToString(m.Body)]++
			n++
			if _, err := env.SQS.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatalf("delete: %v", err)
			}
		}
	}
	return got
}

func TestSQSDuplicateDeliversAgainAfterDelete(t *testing.T) {
	t.Parallel() // waits out SQS timeouts on its own local AWS
	var picked atomic.Int32
	once := func(r localaws.FaultRequest) bool { return picked.Add(1) == 1 }
	env := localaws.StartFaultsForTest(t, localaws.Faults{Seed: 9, Rates: map[string]float64{localaws.FaultSQSDuplicate: 1}, Match: once})
	url := env.QueueURL("usage")
	_, err := env.SQS.SendMessage(context.Background(), &sqs.SendMessageInput{
		QueueUrl: aws.String(url), MessageBody: aws.String("dup-me"),
		MessageAttributes: map[string]sqstypes.MessageAttributeValue{"event_id": {DataType: aws.String("String"), StringValue: aws.String("evt_1")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	first := receiveN(t, env, url, 1)[0]
	if _, err := env.SQS.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: first.ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	// The original is deleted; its duplicate arrives later with the same
	// MessageId, body and message attributes.
	out, err := env.SQS.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(url), WaitTimeSeconds: 3, MessageAttributeNames: []string{"All"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Messages) != 1 || aws.ToString(out.Messages[0].Body) != "dup-me" {
		t.Fatalf("after delete received %d messages, want the duplicate", len(out.Messages))
	}
	if got, want := aws.ToString(out.Messages[0].MessageId), aws.ToString(first.MessageId); got != want {
		t.Errorf("duplicate MessageId %s, want the original's %s", got, want)
	}
	if v := out.Messages[0].MessageAttributes["event_id"]; aws.ToString(v.StringValue) != "evt_1" {
		t.Errorf("duplicate lost its message attributes: %v", out.Messages[0].MessageAttributes)
	}
	if n := env.Faults()[localaws.FaultSQSDuplicate]; n != 1 {
		t.Errorf("Faults()[sqs-duplicate] = %d, want 1", n)
	}
}

func TestSQSDeleteLostReturnsTheMessage(t *testing.T) {
	t.Parallel() // waits out SQS timeouts on its own local AWS
	// Given the first delete of each kind is lost, when a message is
	// deleted with DeleteMessage, and two with DeleteMessageBatch (one
	// entry lost), then the lost ones come back after their visibility
	// timeout and the other does not.
	var singles, entries atomic.Int32
	match := func(r localaws.FaultRequest) bool {
		if r.Operation == "DeleteMessage" {
			return singles.Add(1) == 1
		}
		return entries.Add(1) == 1
	}
	env := localaws.StartFaultsForTest(t, localaws.Faults{Seed: 2, Rates: map[string]float64{localaws.FaultSQSDeleteLost: 1}, Match: match})
	url := env.QueueURL("payments")
	ctx := context.Background()
	for _, body := range []string{"single", "batch-a", "batch-b"} {
		if _, err := env.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)}); err != nil {
			t.Fatal(err)
		}
	}
	msgs := receiveN(t, env, url, 3)
	var batch []sqstypes.DeleteMessageBatchRequestEntry
	for i, m := range msgs {
		if aws.ToString(m.Body) == "single" {
			if _, err := env.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatalf("lost delete answered %v, want success", err)
			}
			continue
		}
		batch = append(batch, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: m.ReceiptHandle})
	}
	out, err := env.SQS.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: batch})
	if err != nil || len(out.Successful) != 2 || len(out.Failed) != 0 {
		t.Fatalf("batch delete = %v, %v; want 2 successful", out, err)
	}
	back := receiveBodies(t, env, url, 0, 3)
	if back["single"] != 1 || back["batch-a"]+back["batch-b"] != 1 {
		t.Errorf("after the visibility timeout got %v, want single and one batch message back", back)
	}
	if n := env.Faults()[localaws.FaultSQSDeleteLost]; n != 2 {
		t.Errorf("Faults()[sqs-delete-lost] = %d, want 2", n)
	}
}

// receiveN receives exactly n messages, with their message attributes,
// under a 1 s visibility timeout.
func receiveN(t *testing.T, env *localaws.Env, url string, n int) []sqstypes.Message {
	t.Helper()
	var msgs []sqstypes.Message
	deadline := time.Now().Add(3 * time.Second)
	for len(msgs) < n && time.Now().Before(deadline) {
		out, err := env.SQS.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: int32(n - len(msgs)), WaitTimeSeconds: 1, VisibilityTimeout: 1,
			MessageAttributeNames: []string{"All"},
		})
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, out.Messages...)
	}
	if len(msgs) != n {
		t.Fatalf("received %d messages, want %d", len(msgs), n)
	}
	return msgs
}

func TestFaultCountsString(t *testing.T) {
	got := localaws.FaultCounts{"sqs-duplicate": 2, "ddb-ambiguous": 5}.String()
	if want := "ddb-ambiguous=5 sqs-duplicate=2"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestSQSDeleteBatchAllLost(t *testing.T) {
	t.Parallel() // waits out SQS timeouts on its own local AWS
	// Given every delete is lost, when a batch delete answers success for
	// its only entry, then the message comes back.
	env := localaws.StartFaultsForTest(t, localaws.Faults{Seed: 4, Rates: map[string]float64{localaws.FaultSQSDeleteLost: 1}})
	url := env.QueueURL("payments")
	ctx := context.Background()
	if _, err := env.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("kept")}); err != nil {
		t.Fatal(err)
	}
	m := receiveN(t, env, url, 1)[0]
	out, err := env.SQS.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url),
		Entries: []sqstypes.DeleteMessageBatchRequestEntry{{Id: aws.String("only"), ReceiptHandle: m.ReceiptHandle}}})
	if err != nil || len(out.Successful) != 1 || aws.ToString(out.Successful[0].Id) != "only" {
		t.Fatalf("batch delete = %+v, %v; want the entry successful", out, err)
	}
	if back := receiveN(t, env, url, 1); aws.ToString(back[0].Body) != "kept" {
		t.Errorf("got %q back, want the undeleted message", aws.ToString(back[0].Body))
	}
}
