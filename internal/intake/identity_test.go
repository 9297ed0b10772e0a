package intake_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/intake"
)

// GitHub, Shopify and Razorpay events are keyed by a digest of their
// signed body since the build that stopped trusting their unsigned ID
// headers; the build before it keyed them by the header's ID. These
// tests hold the roll-out between the two.

// headerEvents are one event as the build before the digest delivered
// it (keyed by the header's ID) and as this build does (keyed by the
// digest, the header's ID kept in its payload and as its legacy ID).
func headerEvents(c *clocked, headerID string) (before, after intake.Event) {
	item := `{"action":"completed","check_run":{"id":4}}`
	digest := "sha256:98fb628504a037c38de1fd79a7336c9a3c20b30ed1234f56e5b29481102a8327"
	before = intake.Event{Source: "payments", EventID: headerID, QueueURL: c.env.QueueURL("payments"), RequestID: "req-before",
		Payload: []byte(`{"provider":"github","id":"` + headerID + `","type":"check_run","item":` + item + `}`)}
	after = intake.Event{Source: "payments", EventID: digest, QueueURL: c.env.QueueURL("payments"), RequestID: "req-after",
		Payload:       []byte(`{"provider":"github","id":"` + digest + `","type":"check_run","header_id":"` + headerID + `","item":` + item + `}`),
		DigestID:      true,
		LegacyEventID: headerID, LegacyPayload: before.Payload}
	return before, after
}

func TestARetryAfterTheDeployOfADeliveryAcceptedBeforeItIsADuplicate(t *testing.T) {
	t.Parallel()
	// Given a delivery the build before the digest accepted, under the
	// header's ID, whose send lease has passed,
	c := newClocked(t, localaws.Faults{})
	before, after := headerEvents(c, "72d3162e-cc78-11e3-81ab-4c9367dc0958")
	first := mustAccept(t, c.store, before)
	if first.Outcome != intake.Accepted || queued(t, c.env, before.EventID) != 1 {
		t.Fatalf("the build before: %+v, want accepted and queued once", first)
	}
	stored := c.record(t, before)
	c.clock.Advance(specLease + time.Millisecond)
	// when the provider retries it after the deploy,
	res, err := c.store.Accept(context.Background(), after)
	// then it is a duplicate of that record, written under no new key,
	if err != nil || res.Outcome != intake.Duplicate || !res.ReceivedAt.Equal(first.ReceivedAt) {
		t.Fatalf("retry after the deploy = %+v, %v; want a duplicate received at %v", res, err, first.ReceivedAt)
	}
	c.absent(t, after)
	// and nothing new is queued: no message under the new identity, and
	// the one message is the old record's, under the old identity, as
	// for any redelivery of a record whose lease passed (the worker's key
	// absorbs it).
	msgs := messagesOf(t, c.env, "")
	if len(msgs) != 1 || aws.ToString(msgs[0].MessageAttributes["event_id"].StringValue) != before.EventID || aws.ToString(msgs[0].Body) != string(before.Payload) {
		t.Fatalf("queue holds %d messages (%+v), want the old record's once", len(msgs), msgs)
	}
	if rec := c.record(t, before); rec.PayloadSHA256 != stored.PayloadSHA256 || rec.ReceivedAt != stored.ReceivedAt {
		t.Errorf("old record now %+v, want it as the build before left it but for its lease", rec)
	}
}

func TestALegacyRecordOfAnotherPayloadIsNotThisEvent(t *testing.T) {
	t.Parallel()
	// Given a record the build before stored under a header ID for other
	// bytes (the header is not signed: anyone can name any ID),
	c := newClocked(t, localaws.Faults{})
	other := drillEvent(c.env, "hdr-named-by-anyone")
	mustAccept(t, c.store, other)
	messagesOf(t, c.env, "")
	_, after := headerEvents(c, other.EventID)
	// when an event is delivered naming that ID,
	res, err := c.store.Accept(context.Background(), after)
	// then it is accepted under its own identity, and the other record
	// is neither taken for it nor sent again.
	if err != nil || res.Outcome != intake.Accepted {
		t.Fatalf("Accept = %+v, %v; want accepted", res, err)
	}
	if rec := c.record(t, after); rec.Payload != string(after.Payload) {
		t.Errorf("record under the digest holds %q", rec.Payload)
	}
	if n, m := queued(t, c.env, after.EventID), queued(t, c.env, other.EventID); n != 1 || m != 0 {
		t.Errorf("queue holds %d messages of the event and %d of the other record, want 1 and 0", n, m)
	}
}

func TestTheSameDigestUnderAnotherHeaderIDIsADuplicate(t *testing.T) {
	t.Parallel()
	// Given an event keyed by its body's digest, accepted,
	c := newClocked(t, localaws.Faults{})
	_, first := headerEvents(c, "hdr-first")
	mustAccept(t, c.store, first)
	c.clock.Advance(specLease + time.Millisecond)
	// when its signed body comes again under another unsigned ID,
	_, again := headerEvents(c, "hdr-second")
	res, err := c.store.Accept(context.Background(), again)
	// then it is a duplicate of the first record, not a conflict, and
	// what is sent again is the first delivery's payload.
	if err != nil || res.Outcome != intake.Duplicate {
		t.Fatalf("Accept = %+v, %v; want a duplicate", res, err)
	}
	msgs := messagesOf(t, c.env, first.EventID)
	if len(msgs) != 2 || aws.ToString(msgs[0].Body) != string(first.Payload) || aws.ToString(msgs[1].Body) != string(first.Payload) {
		t.Fatalf("queue holds %d messages of the event, want the first payload twice", len(msgs))
	}
	if rec := c.record(t, first); rec.Payload != string(first.Payload) {
		t.Errorf("record holds %q, want the first delivery's", rec.Payload)
	}
}
