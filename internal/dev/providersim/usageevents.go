package providersim

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/hookline/hookline/pkg/provider"
)

// UsageEventID returns the webhook event ID of a usage record. It is stable,
// so a resent webhook carries the same ID.
func UsageEventID(recordID string) string { return "evt_usage_" + recordID }

// EmitReport tells what [UsageFeed.EmitUsage] did with each pending record.
type EmitReport struct {
	// Sent holds one delivery per webhook sent, altered ones included.
	Sent []Delivery
	// Dropped lists the record IDs whose webhook was dropped on purpose.
	Dropped []string
	// Altered lists the record IDs whose webhook carried other units.
	Altered []string
}

// UsageEvent returns the webhook event for a record as it would be sent,
// with altered units applied, and whether the record exists.
func (s *core) UsageEvent(recordID string) (provider.UsageEvent, bool) {
	s.usage.mu.Lock()
	defer s.usage.mu.Unlock()
	e, ok := s.usage.byID[recordID]
	if !ok {
		return provider.UsageEvent{}, false
	}
	return s.eventFor(e), true
}

func (s *core) eventFor(e *usageEntry) provider.UsageEvent {
	rec := e.rec
	rec.Units = e.units
	rec.PublishedAt = rec.PublishedAt.UTC()
	return provider.UsageEvent{
		ID:      UsageEventID(rec.RecordID),
		Type:    provider.UsageEventType,
		Created: rec.OccurredAt,
		Data:    rec,
	}
}

// EmitUsage sends the webhook of every record not emitted before, in
// (occurred_at, record_id) order, through snd, one at a time. Records whose
// mode is [WebhookDrop] are marked emitted without a request. A webhook that
// snd could not deliver still counts as emitted: a provider gives up too.
// EmitUsage stops early when ctx is done.
func (s *core) EmitUsage(ctx context.Context, snd *Sender) (EmitReport, error) {
	var rep EmitReport
	for _, e := range s.pendingUsage() {
		if err := ctx.Err(); err != nil {
			return rep, fmt.Errorf("providersim: emit usage: %w", err)
		}
		s.usage.mu.Lock()
		if e.emitted { // a concurrent EmitUsage took it
			s.usage.mu.Unlock()
			continue
		}
		mode, ev := e.mode, s.eventFor(e)
		e.emitted = true
		s.usage.mu.Unlock()
		if mode == WebhookDrop {
			rep.Dropped = append(rep.Dropped, ev.Data.RecordID)
			continue
		}
		body, err := json.Marshal(ev)
		if err != nil {
			return rep, fmt.Errorf("providersim: encode usage event %s: %w", ev.ID, err)
		}
		if mode == WebhookAltered {
			rep.Altered = append(rep.Altered, ev.Data.RecordID)
		}
		rep.Sent = append(rep.Sent, snd.Send(ctx, ev.ID, body))
	}
	return rep, nil
}

// pendingUsage returns the records not emitted yet, in emission order.
func (s *core) pendingUsage() []*usageEntry {
	s.usage.mu.Lock()
	defer s.usage.mu.Unlock()
	var out []*usageEntry
	for _, e := range s.usage.entries {
		if !e.emitted {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b *usageEntry) int {
		if c := a.rec.OccurredAt.Compare(b.rec.OccurredAt); c != 0 {
			return c
		}
		return cmp.Compare(a.rec.RecordID, b.rec.RecordID)
	})
	return out
}
