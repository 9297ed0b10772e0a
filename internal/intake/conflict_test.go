package intake_test

import (
	"context"
	"errors"
	"github.com/hookline/hookline/internal/testkit"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/intake"
)

// A reused event ID with another payload is caught before it can reach a
// queue (409 event_id_conflict), whatever state the first delivery left.

func TestTheSameEventIDWithAnotherPayloadIsAConflict(t *testing.T) {
	const first = `{"id":"evt_reused","amount":1200}`
	tests := []struct {
		name string
		// given leaves the first delivery's record as the test needs it.
		given func(t *testing.T, c *clocked, ev intake.Event)
		other string
	}{
		{name: "while its lease is live", other: `{"id":"evt_reused","amount":1}`,
			given: func(t *testing.T, c *clocked, ev intake.Event) { mustAccept(t, c.store, ev) }},
		{name: "after its lease passed", other: `{"id":"evt_reused","amount":1}`,
			given: func(t *testing.T, c *clocked, ev intake.Event) {
				mustAccept(t, c.store, ev)
				c.clock.Advance(specLease + time.Millisecond)
			}},
		{name: "after a failed send released its lease", other: `{"id":"evt_reused","amount":1}`,
			given: func(t *testing.T, c *clocked, ev intake.Event) {
				if _, err := c.storeWith(t, testkit.DeadSQS(t)).Accept(context.Background(), ev); !errors.Is(err, intake.ErrUnavailable) {
					t.Fatalf("send with SQS down = %v", err)
				}
			}},
		{name: "marked enqueued by an older build", other: `{"id":"evt_reused","amount":1}`,
			given: func(t *testing.T, c *clocked, ev intake.Event) {
				c.putItem(t, olderBuildRecord(ev, intake.StatusEnqueued))
			}},
		{name: "the same JSON with other whitespace", other: `{"id": "evt_reused", "amount": 1200}`,
			given: func(t *testing.T, c *clocked, ev intake.Event) { mustAccept(t, c.store, ev) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newClocked(t, localaws.Faults{})
			ev := drillEvent(c.env, "evt_reused")
			ev.Payload = []byte(first)
			// Given the event's first delivery,
			tt.given(t, c, ev)
			stored := c.record(t, ev)
			sent := queued(t, c.env, ev.EventID)
			// when the same ID comes with another body (its hash is of the
			// bytes as they came, not of what they mean),
			reused := ev
			reused.Payload = []byte(tt.other)
			res, err := c.store.Accept(context.Background(), reused)
			// then it is a conflict after the one put, nothing is queued,
			// and the record is the first delivery's, untouched.
			if !errors.Is(err, intake.ErrConflict) || res.Calls != 1 {
				t.Fatalf("Accept of a reused ID = %+v, %v; want ErrConflict after 1 call", res, err)
			}
			if n := queued(t, c.env, ev.EventID); n != 0 {
				t.Errorf("queue holds %d messages of the reused ID (first delivery sent %d)", n, sent)
			}
			if rec := c.record(t, ev); rec != stored {
				t.Errorf("record after the conflict\n %+v\nwant\n %+v", rec, stored)
			}
		})
	}
}

// mustAccept delivers ev and fails the test unless it is on its queue.
func mustAccept(t *testing.T, store *intake.Store, ev intake.Event) intake.Result {
	t.Helper()
	res, err := store.Accept(context.Background(), ev)
	if err != nil {
		t.Fatalf("Accept %s: %v", ev.EventID, err)
	}
	return res
}
