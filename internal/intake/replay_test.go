package intake_test

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/intake"
)

// Replay by time reads a source's records from the 16 shards of the
// replay index and from the legacy index, oldest first.

// listed is what a replay of source over [since, until] lists, as
// "id@offset from t0". It fails the test unless the records come oldest
// first; records of one millisecond come in no set order (within one
// shard DynamoDB orders equal sort keys as it likes), so listed sorts
// those by ID.
func (c *clocked) listed(t *testing.T, source string, since, until time.Time) []string {
	t.Helper()
	type entry struct {
		id string
		at time.Time
	}
	var got []entry
	err := c.store.ReceivedBetween(context.Background(), source, since, until, func(id string, at time.Time) error {
		if len(got) > 0 && at.Before(got[len(got)-1].at) {
			t.Errorf("%s at %v listed after %s at %v: not oldest first", id, at, got[len(got)-1].id, got[len(got)-1].at)
		}
		got = append(got, entry{id, at})
		return nil
	})
	if err != nil {
		t.Fatalf("replay %s from %v to %v: %v", source, since, until, err)
	}
	slices.SortStableFunc(got, func(a, b entry) int { return cmp.Or(a.at.Compare(b.at), strings.Compare(a.id, b.id)) })
	out := make([]string, len(got))
	for i, e := range got {
		out[i] = fmt.Sprintf("%s@%v", e.id, e.at.Sub(t0))
	}
	return out
}

func TestAReplayByTimeListsEveryShardAndTheLegacyIndexInOrder(t *testing.T) {
	t.Parallel()
	// Given 12 events of one source a second apart from t0 (spread over
	// the index's shards), two of them in the same millisecond, a record
	// an older build wrote at t0 - 1 min, and an event of another source,
	c := newClocked(t, localaws.Faults{})
	var all []string
	for i := range 12 {
		c.clock.Set(t0.Add(time.Duration(min(i, 10)) * time.Second))
		id := fmt.Sprintf("evt_%02d", i)
		mustAccept(t, c.store, drillEvent(c.env, id))
		all = append(all, fmt.Sprintf("%s@%v", id, c.clock.Now().Sub(t0)))
	}
	older := drillEvent(c.env, "evt_older")
	c.putItem(t, olderBuildRecord(older, intake.StatusReceived))
	other := drillEvent(c.env, "evt_other")
	other.Source = "payments-eu"
	mustAccept(t, c.store, other)
	tests := []struct {
		name         string
		since, until time.Time
		want         []string
	}{
		{name: "everything, the older record first", since: t0.Add(-time.Hour), until: t0.Add(time.Hour),
			want: append([]string{"evt_older@-1m0s"}, all...)},
		{name: "both ends inclusive", since: t0.Add(2 * time.Second), until: t0.Add(4 * time.Second), want: all[2:5]},
		{name: "one millisecond", since: t0.Add(10 * time.Second), until: t0.Add(10 * time.Second),
			want: []string{"evt_10@10s", "evt_11@10s"}},
		{name: "nothing between", since: t0.Add(time.Hour), until: t0.Add(2 * time.Hour)},
	}
	for _, tt := range tests {
		// when a replay lists the range, it has exactly the source's
		// records in it, oldest first, with their receive times.
		if got := c.listed(t, "payments", tt.since, tt.until); !slices.Equal(got, tt.want) {
			t.Errorf("%s: listed %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestAnEventIDWithAHashIsItsOwnRecord(t *testing.T) {
	t.Parallel()
	// Given event IDs that share a prefix up to a "#" (the key's own
	// separator), each with its own payload,
	c := newClocked(t, localaws.Faults{})
	ids := []string{"evt", "evt#2", "evt#2#3", "#", "evt#"}
	for _, id := range ids {
		// when each is delivered, each is accepted (none is another's
		// conflict or duplicate),
		if res := mustAccept(t, c.store, drillEvent(c.env, id)); res.Outcome != intake.Accepted {
			t.Fatalf("event %q: %s, want accepted", id, res.Outcome)
		}
	}
	sent := map[string]int{}
	for _, m := range messagesOf(t, c.env, "") {
		sent[attributeStrings(m.MessageAttributes)["event_id"]]++
	}
	for _, id := range ids {
		// reads back as itself, of source "payments",
		ev := drillEvent(c.env, id)
		if rec := c.record(t, ev); rec.Source != "payments" || rec.EventID != id || rec.Payload != string(ev.Payload) {
			t.Errorf("record of %q: source %q event %q payload %s", id, rec.Source, rec.EventID, rec.Payload)
		}
		// and is sent under its whole ID.
		if sent[id] != 1 {
			t.Errorf("queue holds %d messages of %q, want 1 (all: %v)", sent[id], id, sent)
		}
	}
	// A replay by time lists each under its whole ID.
	got := c.listed(t, "payments", t0, t0)
	want := []string{"#@0s", "evt@0s", "evt#@0s", "evt#2@0s", "evt#2#3@0s"}
	if !slices.Equal(got, want) {
		t.Errorf("replay listed %v, want %v", got, want)
	}
}
