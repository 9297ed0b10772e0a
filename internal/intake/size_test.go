package intake_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/intake"
)

// One intake record holds a payload of up to intake.MaxPayload bytes:
// DynamoDB's 400 KB item, less what the rest of the record takes.

// text is n bytes of seeded random printable ASCII: gzip saves little of it.
func text(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(' ' + r.IntN('~'-' '+1))
	}
	return b
}

func TestTheLargestPayloadFitsOneRecord(t *testing.T) {
	t.Parallel()
	// Given an event of the longest source name and event ID the
	// receiver lets through, with a payload of intake.MaxPayload bytes,
	c := newClocked(t, localaws.Faults{})
	ev := intake.Event{Source: strings.Repeat("s", 64), EventID: strings.Repeat("e#", 127) + "e", QueueURL: c.env.QueueURL("payments"),
		Payload: text(61, intake.MaxPayload), RequestID: strings.Repeat("r", 64), ProviderTimestamp: t0}
	// when it is delivered, it is accepted,
	if res, err := c.store.Accept(context.Background(), ev); err != nil || res.Outcome != intake.Accepted {
		t.Fatalf("Accept of a %d-byte payload = %+v, %v; want accepted", len(ev.Payload), res, err)
	}
	// its record reads back with the payload whole, and the queue holds it.
	if rec := c.record(t, ev); rec.Payload != string(ev.Payload) {
		t.Fatalf("record holds %d bytes of the %d-byte payload", len(rec.Payload), len(ev.Payload))
	}
	if msgs := messagesOf(t, c.env, ev.EventID); len(msgs) != 1 || len(*msgs[0].Body) != len(ev.Payload) {
		t.Fatalf("queue holds %d messages of the event, want its payload once", len(msgs))
	}
}

func TestAPayloadOverTheLimitIsRefusedBeforeAnythingIsStored(t *testing.T) {
	tests := []struct {
		name    string
		payload []byte
	}{
		// gzip would fit it in one item, but a record read back holds
		// at most one item's worth of payload
		{name: "compressible", payload: []byte(`{"note":"` + strings.Repeat("a", 600<<10) + `"}`)},
		// no form of it fits one item
		{name: "incompressible", payload: text(67, 500<<10)},
		{name: "one byte over", payload: text(71, intake.MaxPayload+1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// Given a payload larger than one record holds,
			c := newClocked(t, localaws.Faults{})
			ev := drillEvent(c.env, "evt_too_large")
			ev.Payload = tt.payload
			// when it is delivered,
			res, err := c.store.Accept(context.Background(), ev)
			// then it is refused as bad input (a retry would meet the same
			// refusal: it is not unavailable), before any AWS call, and
			// nothing is stored or queued.
			if err == nil {
				rec := c.record(t, ev)
				t.Fatalf("Accept of a %d-byte payload = %+v; accepted, and its record reads back %d bytes", len(ev.Payload), res, len(rec.Payload))
			}
			if !errors.Is(err, intake.ErrTooLarge) || res.Calls != 0 {
				t.Fatalf("Accept of a %d-byte payload = %+v, %v; want ErrTooLarge before any call", len(ev.Payload), res, err)
			}
			c.absent(t, ev)
			if n := queued(t, c.env, ev.EventID); n != 0 {
				t.Errorf("queue holds %d messages, want none", n)
			}
		})
	}
}
