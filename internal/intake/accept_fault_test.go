package intake_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/intake"
)

// Drills: the intake store under the local AWS fault layer. Each aims one
// fault at one operation (rate 1, usually its first attempt only), drives
// the real store against the embedded emulators, and checks that the
// event is neither lost nor left unsent, and that an SDK retry of a write
// that had committed is taken for this delivery's own.

func newFaultStore(t *testing.T, f localaws.Faults) (*localaws.Env, *intake.Store) {
	t.Helper()
	env := localaws.StartFaultsForTest(t, f)
	store, err := intake.New(intake.Config{
		DynamoDB: env.DynamoDB, SQS: env.SQS, Table: env.TableName("IntakeTable"),
		Lease: 2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	return env, store
}

func drillEvent(env *localaws.Env, id string) intake.Event {
	return intake.Event{
		Source: "payments", EventID: id, QueueURL: env.QueueURL("payments"),
		Payload: []byte(`{"id":"` + id + `","amount":1200}`), RequestID: "req-" + id,
	}
}

// queued counts the messages on the payments queue for eventID.
func queued(t *testing.T, env *localaws.Env, eventID string) int {
	t.Helper()
	return len(messagesOf(t, env, eventID))
}

// messagesOf receives every visible message on the payments queue and
// returns those of eventID (all of them for ""); the others stay hidden
// for 30 s.
func messagesOf(t *testing.T, env *localaws.Env, eventID string) []sqstypes.Message {
	t.Helper()
	var got []sqstypes.Message
	for {
		out, err := env.SQS.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(env.QueueURL("payments")), MaxNumberOfMessages: 10, VisibilityTimeout: 30,
			MessageAttributeNames: []string{"All"},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			return got
		}
		for _, m := range out.Messages {
			if eventID == "" || aws.ToString(m.MessageAttributes["event_id"].StringValue) == eventID {
				got = append(got, m)
			}
		}
	}
}

// mustBeEnqueued checks that the event's record is there, received (no
// write marks it sent), and that the queue holds it.
func mustBeEnqueued(t *testing.T, env *localaws.Env, store *intake.Store, ev intake.Event) {
	t.Helper()
	rec, ok, err := store.Get(context.Background(), ev.Source, ev.EventID)
	if err != nil || !ok {
		t.Fatalf("intake record of %s: found %v, %v", ev.EventID, ok, err)
	}
	if rec.Status != intake.StatusReceived || rec.Payload != string(ev.Payload) {
		t.Errorf("record status %q payload %q, want received with the payload", rec.Status, rec.Payload)
	}
	if n := queued(t, env, ev.EventID); n < 1 {
		t.Errorf("queue holds %d messages of %s, want at least 1", n, ev.EventID)
	}
}

func TestIntakeCreateUnderFirstAttemptFaults(t *testing.T) {
	for _, fault := range []string{localaws.FaultDDBAmbiguous, localaws.FaultDDBError, localaws.FaultDDBThrottle} {
		t.Run(fault, func(t *testing.T) {
			// Given the intake PutItem's first attempt meets the fault (for
			// ddb-ambiguous: it commits, and the answer is lost),
			env, store := newFaultStore(t, localaws.Faults{Seed: 23, Rates: map[string]float64{fault: 1},
				Match: localaws.FirstAttempt(fault, "PutItem")})
			ev := drillEvent(env, "evt_create_"+fault)
			// when the receiver accepts the event and the SDK retries the put,
			res, err := store.Accept(context.Background(), ev)
			// then the retry that finds this delivery's own record sends,
			// rather than waiting on itself and answering busy.
			if err != nil {
				t.Fatalf("Accept = %v, want accepted (faults %v)", err, env.Faults())
			}
			if res.Outcome != intake.Accepted {
				t.Errorf("outcome %q, want accepted", res.Outcome)
			}
			if env.Faults()[fault] != 1 {
				t.Errorf("faults injected %v, want one %s", env.Faults(), fault)
			}
			mustBeEnqueued(t, env, store, ev)
		})
	}
}

func TestIntakeLeaseTakeoverAmbiguous(t *testing.T) {
	// Given a received record whose send lease expired (its delivery died
	// before sending), and the take-over UpdateItem's first attempt
	// commits and answers 500,
	env, store := newFaultStore(t, localaws.Faults{Seed: 29, Rates: map[string]float64{localaws.FaultDDBAmbiguous: 1},
		Match: localaws.FirstAttempt(localaws.FaultDDBAmbiguous, "UpdateItem")})
	ev := drillEvent(env, "evt_takeover")
	putStaleRecord(t, env, ev)
	// when the provider redelivers and the SDK retries the take-over,
	res, err := store.Accept(context.Background(), ev)
	// then the retry that finds this delivery's own lease token sends (a
	// duplicate: nothing tells a holder that died before its send from one
	// that sent).
	if err != nil {
		t.Fatalf("Accept = %v, want sent (faults %v)", err, env.Faults())
	}
	if res.Outcome != intake.Duplicate {
		t.Errorf("outcome %q, want duplicate", res.Outcome)
	}
	if env.Faults()[localaws.FaultDDBAmbiguous] == 0 {
		t.Fatal("no ambiguous write was injected")
	}
	mustBeEnqueued(t, env, store, ev)
}

// putStaleRecord writes ev's record as a delivery that died after
// recording it would have left it: received, lease expired, nothing sent.
func putStaleRecord(t *testing.T, env *localaws.Env, ev intake.Event) {
	t.Helper()
	now := time.Now()
	rec := intake.Record{
		PK: intake.Key(ev.Source, ev.EventID), Source: ev.Source, EventID: ev.EventID,
		ReceivedAt: now.Add(-time.Minute).UTC().Format("2006-01-02T15:04:05.000Z07:00"), Verification: "verified",
		PayloadSHA256: intake.PayloadHash(ev.Payload), Payload: string(ev.Payload), Status: intake.StatusReceived,
		QueueURL: ev.QueueURL, LeaseUntil: now.Add(-time.Second).UnixMilli(), LeaseToken: "dead-delivery",
		ExpiresAt: now.Add(time.Hour).Unix(),
	}
	item, err := attributevalue.MarshalMap(rec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.DynamoDB.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(env.TableName("IntakeTable")), Item: item}); err != nil {
		t.Fatal(err)
	}
}

func TestIntakeSendAmbiguousFirstAttempt(t *testing.T) {
	// Given the SendMessage's first attempt is enqueued and answered 500,
	env, store := newFaultStore(t, localaws.Faults{Seed: 31, Rates: map[string]float64{localaws.FaultSQSSendAmbiguous: 1},
		Match: localaws.FirstAttempt(localaws.FaultSQSSendAmbiguous, "SendMessage")})
	ev := drillEvent(env, "evt_send")
	// when the SDK retries the send,
	res, err := store.Accept(context.Background(), ev)
	// then the event is accepted and on the queue (twice: a duplicate the
	// worker's idempotency absorbs, never a loss).
	if err != nil || res.Outcome != intake.Accepted {
		t.Fatalf("Accept = %v, %v; want accepted", res.Outcome, err)
	}
	if res.MessageID == "" {
		t.Errorf("accepted without the message's ID")
	}
	if n := queued(t, env, ev.EventID); n != 2 {
		t.Errorf("queue holds %d messages of the event, want 2 (the ambiguous send and its retry)", n)
	}
}

func TestIntakeSendAmbiguousEveryAttemptThenProviderRetry(t *testing.T) {
	// Given every attempt of the first delivery's send is enqueued and
	// answered 500,
	var faulty atomic.Bool
	faulty.Store(true)
	env, store := newFaultStore(t, localaws.Faults{Seed: 37, Rates: map[string]float64{localaws.FaultSQSSendAmbiguous: 1},
		Match: func(localaws.FaultRequest) bool { return faulty.Load() }})
	ev := drillEvent(env, "evt_send_all")
	// when the receiver accepts it, it answers unavailable (so the
	// provider retries), never accepted without a send it saw succeed;
	if _, err := store.Accept(context.Background(), ev); !errors.Is(err, intake.ErrUnavailable) {
		t.Fatalf("Accept with every send answering 500 = %v, want ErrUnavailable", err)
	}
	// and when the provider retries after SQS recovers, the event is sent
	// at once (the failed send released its lease).
	faulty.Store(false)
	res, err := store.Accept(context.Background(), ev)
	if err != nil || res.Outcome != intake.Accepted {
		t.Fatalf("provider retry = %v, %v; want accepted", res.Outcome, err)
	}
	mustBeEnqueued(t, env, store, ev)
}
