package intake_test

import (
	"context"
	"errors"
	"github.com/hookline/hookline/internal/testkit"
	"maps"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/intake"
)

// The crash points of docs/intake-ordering.md, one test each: what a
// delivery that stops there leaves stored, and what the provider's next
// delivery does with it. Each runs the store against the embedded local
// AWS on a manual clock.

func TestAFirstDeliveryIsRecordedThenSentAndAccepted(t *testing.T) {
	t.Parallel()
	// Given a new event,
	c := newClocked(t, localaws.Faults{})
	ev := drillEvent(c.env, "evt_first")
	ev.ProviderTimestamp = t0.Add(-3 * time.Second)
	// when it is delivered,
	res, err := c.store.Accept(context.Background(), ev)
	// then it is accepted after two calls, the put and the send,
	if err != nil || res.Outcome != intake.Accepted || res.Calls != 2 || res.MessageID == "" || !res.ReceivedAt.Equal(t0) {
		t.Fatalf("Accept = %+v, %v; want accepted at %v after 2 calls with a message ID", res, err, t0)
	}
	// its record is received, with the payload, its hash, a live lease,
	// its index shard and its retention,
	rec := c.record(t, ev)
	want := intake.Record{
		PK: intake.Key(ev.Source, ev.EventID), Source: ev.Source, SourceShard: intake.ShardKey(ev.Source, ev.EventID),
		EventID: ev.EventID, ReceivedAt: stamp(t0), ProviderTimestamp: stamp(ev.ProviderTimestamp), Verification: "verified",
		PayloadSHA256: intake.PayloadHash(ev.Payload), Payload: string(ev.Payload), Status: intake.StatusReceived,
		QueueURL: ev.QueueURL, LeaseUntil: t0.Add(specLease).UnixMilli(), LeaseToken: rec.LeaseToken,
		FirstRequestID: ev.RequestID, ExpiresAt: t0.Add(intake.DefaultRetention).Unix(),
	}
	if rec != want || rec.LeaseToken == "" {
		t.Errorf("record\n %+v\nwant\n %+v", rec, want)
	}
	// stored without a source attribute, which would write the one
	// partition of the legacy index that all of a source's events share,
	if _, ok := c.rawItem(t, ev)["source"]; ok {
		t.Errorf("the record stores its source")
	}
	// and the queue holds the payload byte for byte, with the attributes
	// a replay sends too.
	msgs := messagesOf(t, c.env, ev.EventID)
	if len(msgs) != 1 || aws.ToString(msgs[0].Body) != string(ev.Payload) || aws.ToString(msgs[0].MessageId) != res.MessageID {
		t.Fatalf("queue holds %d messages of the event (%+v), want its payload once as %s", len(msgs), msgs, res.MessageID)
	}
	if got, want := attributeStrings(msgs[0].MessageAttributes), attributeStrings(intake.MessageAttributes(rec)); !maps.Equal(got, want) || len(got) != 4 {
		t.Errorf("message attributes %v, want %v (source, event_id, received_at, provider_ts)", got, want)
	}
}

func TestAPutThatFailsLeavesNothingAndTheRetryIsAFirstAttempt(t *testing.T) {
	t.Parallel()
	// Given DynamoDB answering every attempt of the intake put with a 500,
	var down atomic.Bool
	down.Store(true)
	c := newClocked(t, localaws.Faults{Seed: 43, Rates: map[string]float64{localaws.FaultDDBError: 1},
		Match: func(r localaws.FaultRequest) bool { return down.Load() && r.Operation == "PutItem" }})
	ev := drillEvent(c.env, "evt_put_down")
	// when the event is delivered, it is unavailable (503: the provider
	// retries), nothing is recorded and nothing is queued;
	if res, err := c.store.Accept(context.Background(), ev); !errors.Is(err, intake.ErrUnavailable) || res.Calls != 1 {
		t.Fatalf("Accept with the put failing = %+v, %v; want ErrUnavailable after 1 call", res, err)
	}
	c.absent(t, ev)
	if n := queued(t, c.env, ev.EventID); n != 0 {
		t.Fatalf("queue holds %d messages of an event never recorded", n)
	}
	// and when the provider retries after DynamoDB recovers, that is a
	// clean first attempt: accepted, with no lease to wait for.
	down.Store(false)
	if res, err := c.store.Accept(context.Background(), ev); err != nil || res.Outcome != intake.Accepted {
		t.Fatalf("retry after recovery = %+v, %v; want accepted", res, err)
	}
	if n := queued(t, c.env, ev.EventID); n != 1 {
		t.Errorf("queue holds %d messages, want 1", n)
	}
}

func TestACrashAfterThePutIsSentOnceTheLeasePasses(t *testing.T) {
	t.Parallel()
	// Given a delivery that recorded the event and died before its send:
	// its SQS is unreachable and the release of its lease fails too, so it
	// leaves what a crash leaves, a received record with a live lease,
	var dying atomic.Bool
	dying.Store(true)
	c := newClocked(t, localaws.Faults{Seed: 47, Rates: map[string]float64{localaws.FaultDDBError: 1},
		Match: func(r localaws.FaultRequest) bool { return dying.Load() && r.Operation == "UpdateItem" }})
	ev := drillEvent(c.env, "evt_crash_put")
	if _, err := c.storeWith(t, testkit.DeadSQS(t)).Accept(context.Background(), ev); !errors.Is(err, intake.ErrUnavailable) {
		t.Fatalf("the dying delivery = %v, want ErrUnavailable", err)
	}
	dying.Store(false)
	if c.env.Faults()[localaws.FaultDDBError] == 0 {
		t.Fatal("the lease release was not refused")
	}
	left := c.record(t, ev)
	if left.Status != intake.StatusReceived || left.LeaseUntil != t0.Add(specLease).UnixMilli() {
		t.Fatalf("the crash left %+v, want received with its lease live until %v", left, t0.Add(specLease))
	}
	// when the provider redelivers within the lease, it is asked to retry
	// (503 in_progress) and nothing is sent: the holder may be sending;
	c.clock.Advance(specLease / 2)
	if _, err := c.store.Accept(context.Background(), ev); !errors.Is(err, intake.ErrBusy) {
		t.Fatalf("redelivery within the lease = %v, want ErrBusy", err)
	}
	if n := queued(t, c.env, ev.EventID); n != 0 {
		t.Fatalf("queue holds %d messages while the lease is live, want none", n)
	}
	// and when it redelivers after the lease, the redelivery takes the
	// lease (a put, an update) and sends: the event is enqueued, answered
	// duplicate, since nothing tells a holder that died before its send
	// from one that sent.
	c.clock.Set(t0.Add(specLease + time.Millisecond))
	res, err := c.store.Accept(context.Background(), ev)
	if err != nil || res.Outcome != intake.Duplicate || res.Calls != 3 || !res.ReceivedAt.Equal(t0) {
		t.Fatalf("redelivery after the lease = %+v, %v; want duplicate after 3 calls, received at %v", res, err, t0)
	}
	if n := queued(t, c.env, ev.EventID); n != 1 {
		t.Fatalf("queue holds %d messages, want the event once", n)
	}
	taken := c.record(t, ev)
	if taken.LeaseToken == left.LeaseToken || taken.LeaseUntil != c.clock.Now().Add(specLease).UnixMilli() {
		t.Errorf("lease after the take-over: token %s until %d, want a new token until %d", taken.LeaseToken, taken.LeaseUntil, c.clock.Now().Add(specLease).UnixMilli())
	}
}

func TestASendThatFailsReleasesTheLease(t *testing.T) {
	t.Parallel()
	// Given a delivery whose send fails (SQS down for its receiver),
	c := newClocked(t, localaws.Faults{})
	ev := drillEvent(c.env, "evt_send_down")
	res, err := c.storeWith(t, testkit.DeadSQS(t)).Accept(context.Background(), ev)
	// then it answers unavailable after the put, the send and the release,
	if !errors.Is(err, intake.ErrUnavailable) || res.Calls != 3 {
		t.Fatalf("Accept with SQS down = %+v, %v; want ErrUnavailable after 3 calls", res, err)
	}
	// and leaves the record received with its lease released;
	if rec := c.record(t, ev); rec.Status != intake.StatusReceived || rec.LeaseUntil != 0 {
		t.Fatalf("record after the failed send: status %s lease until %d, want received and released", rec.Status, rec.LeaseUntil)
	}
	// when the provider retries at once (the clock has not moved), the
	// retry takes the lease without waiting and sends: that send is the
	// event's first, so it is accepted.
	res, err = c.store.Accept(context.Background(), ev)
	if err != nil || res.Outcome != intake.Accepted || res.Calls != 3 {
		t.Fatalf("retry after the failed send = %+v, %v; want accepted after 3 calls", res, err)
	}
	if n := queued(t, c.env, ev.EventID); n != 1 {
		t.Errorf("queue holds %d messages, want 1", n)
	}
}

func TestACrashAfterTheSendIsSentAgainAsADuplicate(t *testing.T) {
	t.Parallel()
	// Given an event that was recorded and sent, whose 200 never reached
	// the provider (the receiver died, or the answer was lost),
	c := newClocked(t, localaws.Faults{})
	ev := drillEvent(c.env, "evt_crash_send")
	first, err := c.store.Accept(context.Background(), ev)
	if err != nil || first.Outcome != intake.Accepted {
		t.Fatalf("first delivery = %+v, %v", first, err)
	}
	sent := messagesOf(t, c.env, ev.EventID)
	// when the provider redelivers within the lease, it is asked to retry
	// and nothing more is queued;
	c.clock.Advance(time.Second)
	if _, err := c.store.Accept(context.Background(), ev); !errors.Is(err, intake.ErrBusy) {
		t.Fatalf("redelivery within the lease = %v, want ErrBusy", err)
	}
	// and when it redelivers after the lease, the event is sent again and
	// answered duplicate: a second message, with the first's body and
	// attributes, which the workers' idempotency absorbs.
	c.clock.Advance(specLease)
	res, err := c.store.Accept(context.Background(), ev)
	if err != nil || res.Outcome != intake.Duplicate || !res.ReceivedAt.Equal(t0) {
		t.Fatalf("redelivery after the lease = %+v, %v; want duplicate, received at %v", res, err, t0)
	}
	again := messagesOf(t, c.env, ev.EventID)
	if len(sent) != 1 || len(again) != 1 {
		t.Fatalf("queue held %d then %d messages of the event, want 1 and 1", len(sent), len(again))
	}
	if aws.ToString(again[0].Body) != aws.ToString(sent[0].Body) ||
		!maps.Equal(attributeStrings(again[0].MessageAttributes), attributeStrings(sent[0].MessageAttributes)) {
		t.Errorf("the second message differs from the first: %+v, %+v", again[0], sent[0])
	}
	if rec := c.record(t, ev); rec.Status != intake.StatusReceived {
		t.Errorf("record status %s, want received (nothing marks a record sent)", rec.Status)
	}
}

func TestAnAmbiguousPutThatNeverAnswersIsSentByTheNextDelivery(t *testing.T) {
	t.Parallel()
	// Given an intake put whose first attempt commits and is answered 500
	// or dropped, and whose SDK retries all fail,
	var faulty atomic.Bool
	faulty.Store(true)
	c := newClocked(t, localaws.Faults{Seed: 53,
		Rates: map[string]float64{localaws.FaultDDBAmbiguous: 1, localaws.FaultDDBError: 1},
		Match: func(r localaws.FaultRequest) bool {
			if !faulty.Load() || r.Operation != "PutItem" {
				return false
			}
			return (r.Fault == localaws.FaultDDBAmbiguous) == (r.Attempt == 1)
		}})
	ev := drillEvent(c.env, "evt_put_lost")
	// when the event is delivered, it is unavailable, though its record
	// was written, and nothing is queued;
	if _, err := c.store.Accept(context.Background(), ev); !errors.Is(err, intake.ErrUnavailable) {
		t.Fatalf("Accept = %v, want ErrUnavailable (faults %v)", err, c.env.Faults())
	}
	faulty.Store(false)
	if c.env.Faults()[localaws.FaultDDBAmbiguous] != 1 {
		t.Fatalf("faults %v, want one ambiguous put", c.env.Faults())
	}
	c.record(t, ev)
	if n := queued(t, c.env, ev.EventID); n != 0 {
		t.Fatalf("queue holds %d messages, want none", n)
	}
	// and the provider's retry after the lease takes it over and sends
	// the event, once, answered duplicate.
	c.clock.Advance(specLease + time.Millisecond)
	if res, err := c.store.Accept(context.Background(), ev); err != nil || res.Outcome != intake.Duplicate {
		t.Fatalf("retry after the lease = %+v, %v; want duplicate", res, err)
	}
	if n := queued(t, c.env, ev.EventID); n != 1 {
		t.Errorf("queue holds %d messages, want 1", n)
	}
}

// attributeStrings is a message's string attributes by name.
func attributeStrings(attrs map[string]sqstypes.MessageAttributeValue) map[string]string {
	out := map[string]string{}
	for k, v := range attrs {
		out[k] = aws.ToString(v.StringValue)
	}
	return out
}
