package intake_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/intake"
)

func TestAnAttributionIsKeptOnItsIntakeRecordOnly(t *testing.T) {
	t.Parallel()
	// Given an accepted usage event,
	c := newClocked(t, localaws.Faults{})
	ev := drillEvent(c.env, "evt_usage")
	mustAccept(t, c.store, ev)
	marks, err := intake.NewAttributions(c.env.DynamoDB, c.env.TableName("IntakeTable"), c.clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	// when the spend worker marks it deferred, the mark is on its record,
	// beside a delivery state it leaves alone;
	ok, err := marks.Mark(context.Background(), intake.Mark{Source: ev.Source, EventID: ev.EventID,
		State: intake.AttributionDeferred, Workload: "wl-7", Reason: "retired workload"})
	if !ok || err != nil {
		t.Fatalf("Mark = %v, %v; want marked", ok, err)
	}
	rec := c.record(t, ev)
	if rec.Attribution != intake.AttributionDeferred || rec.AttributionWorkload != "wl-7" || rec.AttributionReason != "retired workload" ||
		rec.AttributedAt != stamp(t0) || rec.Status != intake.StatusReceived || rec.Payload != string(ev.Payload) {
		t.Errorf("record after the mark: %+v", rec)
	}
	// a mark of an event without a record reports false and creates none;
	gone := drillEvent(c.env, "evt_no_record")
	if ok, err := marks.Mark(context.Background(), intake.Mark{Source: gone.Source, EventID: gone.EventID, State: intake.Attributed}); ok || err != nil {
		t.Fatalf("Mark without a record = %v, %v; want false, nil", ok, err)
	}
	c.absent(t, gone)
	// and a mark DynamoDB refuses is unavailable, for the worker to retry.
	localaws.HoldPartitionAtLimit(t, c.env, c.env.TableName("IntakeTable"), intake.Key(ev.Source, ev.EventID))
	if _, err := marks.Mark(context.Background(), intake.Mark{Source: ev.Source, EventID: ev.EventID, State: intake.Attributed}); !errors.Is(err, intake.ErrUnavailable) {
		t.Fatalf("Mark on a throttled partition = %v, want ErrUnavailable", err)
	}
}

func TestAStoreNeedsItsClientsAndTable(t *testing.T) {
	_, err := intake.New(intake.Config{})
	for _, want := range []string{"DynamoDB client", "SQS client", "table name"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New with an empty config = %v, want it to name the %s", err, want)
		}
	}
	if _, err := intake.NewAttributions(nil, "", nil); err == nil {
		t.Errorf("NewAttributions without a client or table succeeded")
	}
}
