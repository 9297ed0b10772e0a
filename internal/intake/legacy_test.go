package intake_test

import (
	"context"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/intake"
)

// Records that older builds wrote stay readable and are answered as
// docs/intake-ordering.md says: one marked enqueued is a duplicate and is
// not sent again; one carrying its source and no source_shard (written
// before the replay index was sharded, and before payload_gz) is taken
// over like any other, and a replay by time still finds it.

// olderRecord is an intake record as builds before the sharded index and
// payload_gz wrote it: with a source, without a shard, the payload as a
// string.
type olderRecord struct {
	PK            string `dynamodbav:"pk"`
	Source        string `dynamodbav:"source"`
	EventID       string `dynamodbav:"event_id"`
	ReceivedAt    string `dynamodbav:"received_at"`
	Verification  string `dynamodbav:"verification"`
	PayloadSHA256 string `dynamodbav:"payload_sha256"`
	Payload       string `dynamodbav:"payload"`
	Status        string `dynamodbav:"status"`
	QueueURL      string `dynamodbav:"queue_url"`
	MessageID     string `dynamodbav:"message_id,omitempty"`
	EnqueuedAt    string `dynamodbav:"enqueued_at,omitempty"`
	LeaseUntil    int64  `dynamodbav:"lease_until"`
	LeaseToken    string `dynamodbav:"lease_token"`
	ExpiresAt     int64  `dynamodbav:"expires_at"`
}

// olderBuildRecord is ev's record as an older build left it a minute
// before t0, in status, its lease long passed.
func olderBuildRecord(ev intake.Event, status string) olderRecord {
	at := t0.Add(-time.Minute)
	rec := olderRecord{
		PK: intake.Key(ev.Source, ev.EventID), Source: ev.Source, EventID: ev.EventID, ReceivedAt: stamp(at),
		Verification: "verified", PayloadSHA256: intake.PayloadHash(ev.Payload), Payload: string(ev.Payload),
		Status: status, QueueURL: ev.QueueURL, LeaseUntil: at.Add(specLease).UnixMilli(), LeaseToken: "older-build",
		ExpiresAt: at.Add(intake.DefaultRetention).Unix(),
	}
	if status == intake.StatusEnqueued {
		rec.MessageID, rec.EnqueuedAt = "msg-older-build", stamp(at)
	}
	return rec
}

func TestARecordAnOlderBuildMarkedEnqueuedIsNotSentAgain(t *testing.T) {
	t.Parallel()
	// Given a record an older build marked enqueued,
	c := newClocked(t, localaws.Faults{})
	ev := drillEvent(c.env, "evt_marked")
	c.putItem(t, olderBuildRecord(ev, intake.StatusEnqueued))
	// when the provider redelivers the event,
	res, err := c.store.Accept(context.Background(), ev)
	// then it is a duplicate after the one put, naming the message and
	// the time of the first delivery, and nothing is sent or written.
	if err != nil || res.Outcome != intake.Duplicate || res.Calls != 1 || res.MessageID != "msg-older-build" || !res.ReceivedAt.Equal(t0.Add(-time.Minute)) {
		t.Fatalf("redelivery of a marked record = %+v, %v; want duplicate after 1 call, msg-older-build", res, err)
	}
	if n := queued(t, c.env, ev.EventID); n != 0 {
		t.Errorf("queue holds %d messages, want none", n)
	}
	if rec := c.record(t, ev); rec.Status != intake.StatusEnqueued || rec.LeaseToken != "older-build" {
		t.Errorf("record %+v, want it as the older build left it", rec)
	}
}

func TestARecordWrittenBeforeTheShardsIsTakenOverAndReplayed(t *testing.T) {
	t.Parallel()
	// Given a record written before the sharded index, received, whose
	// delivery died before its send, and one event accepted since,
	c := newClocked(t, localaws.Faults{})
	old := drillEvent(c.env, "evt_before_shards")
	c.putItem(t, olderBuildRecord(old, intake.StatusReceived))
	mustAccept(t, c.store, drillEvent(c.env, "evt_since_shards"))
	// when the provider redelivers the older event, it is taken over and
	// sent with its source and first receive time,
	res, err := c.store.Accept(context.Background(), old)
	if err != nil || res.Outcome != intake.Duplicate {
		t.Fatalf("redelivery of an older record = %+v, %v; want duplicate", res, err)
	}
	msgs := messagesOf(t, c.env, old.EventID)
	if len(msgs) != 1 {
		t.Fatalf("queue holds %d messages of the older event, want 1", len(msgs))
	}
	attrs := attributeStrings(msgs[0].MessageAttributes)
	if attrs["source"] != "payments" || attrs["received_at"] != stamp(t0.Add(-time.Minute)) {
		t.Errorf("message attributes %v, want source payments received %s", attrs, stamp(t0.Add(-time.Minute)))
	}
	// it reads back whole,
	rec := c.record(t, old)
	if rec.Source != "payments" || rec.SourceShard != "" || rec.Payload != string(old.Payload) {
		t.Errorf("older record read back as %+v", rec)
	}
	// and a replay by time lists it from the legacy index before the
	// event accepted since.
	var listed []string
	err = c.store.ReceivedBetween(context.Background(), "payments", t0.Add(-time.Hour), t0, func(id string, _ time.Time) error {
		listed = append(listed, id)
		return nil
	})
	if err != nil || len(listed) != 2 || listed[0] != old.EventID || listed[1] != "evt_since_shards" {
		t.Fatalf("replay listed %v, %v; want [%s evt_since_shards]", listed, err, old.EventID)
	}
}
