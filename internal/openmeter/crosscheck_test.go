package openmeter_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/internal/openmeter"
	"github.com/hookline/hookline/internal/pager"
	"github.com/hookline/hookline/internal/reconcile"
	"github.com/hookline/hookline/internal/spend"
	"github.com/hookline/hookline/internal/sums"
	"github.com/hookline/hookline/internal/usagein"
)

// crossRig is OpenMeter as both the reconciler's per-record export and a
// sums source over the same usage source, on one manual clock, with the
// ledger on local AWS: the settle-time cross-check of design.md.
type crossRig struct {
	*rig
	spend  *spend.Spend
	outbox *pager.Outbox
	rec    *reconcile.Reconciler
}

// crossSums is an OpenMeter sums source over the meters source's tokens,
// hourly, settled two hours after a bucket ends. Its references are
// every alias of a workload.
func crossSums(url string) string {
	return fmt.Sprintf(`{"om": {"provider": "openmeter", "usage_source": "meters", "account": "ns_default",
	  "start": %q, "settle": "2h", "lag": "1m", "interval": "1m", "base_url": %q,
	  "meters": {"com.example.tokens": {"provider_meter": "tokens_total", "aggregation": "sum", "scale": 1000}}}}`,
		t0.Add(-24*time.Hour).Format(time.RFC3339), url)
}

func newCrossRig(t *testing.T) *crossRig {
	t.Helper()
	r := &crossRig{rig: newRig(t, nil)}
	if err := r.om.AddMeter(providersimMeter()); err != nil {
		t.Fatal(err)
	}
	srcs, err := sums.ParseSources(crossSums(r.om.URL()))
	if err != nil {
		t.Fatal(err)
	}
	env := localaws.StartForTest(t)
	ledger := env.TableName("LedgerTable")
	r.outbox, err = pager.NewOutbox(pager.OutboxConfig{DB: env.DynamoDB, Table: ledger, Now: r.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	contract := spend.PathContract{ExpectedArrival: time.Minute, MaxAge: time.Hour, Interval: 5 * time.Minute}
	r.spend, err = spend.New(spend.Config{DB: env.DynamoDB, LedgerTable: ledger, WorkloadsTable: env.TableName("WorkloadsTable"),
		Pages: r.outbox, Webhook: contract, Poll: contract, ReconOwner: "billing-oncall", ReconRoutingKey: "rk",
		Now: r.clock.Now, Sums: srcs})
	if err != nil {
		t.Fatal(err)
	}
	reader, err := openmeter.NewReader(openmeter.Config{BaseURL: r.om.URL(), APIKey: "om_key"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := reconcile.NewSums(reconcile.SumsConfig{Spend: r.spend, Sources: srcs,
		Readers: map[string]sums.Reader{"om": reader}, DB: env.DynamoDB, Table: ledger, Now: r.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	r.rec, err = reconcile.New(reconcile.Config{Spend: r.spend, Export: r.c,
		DB: env.DynamoDB, Table: ledger, Pages: r.outbox, ReconRoutingKey: "rk", Now: r.clock.Now, Sums: s})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		r.workload(t, "wl-"+id, "cust-"+id)
	}
	return r
}

// workload creates workload id, whose subject at OpenMeter (and alias)
// is subject.
func (r *crossRig) workload(t *testing.T, id, subject string) {
	t.Helper()
	ctx := context.Background()
	if _, err := r.spend.Workloads.CreateWorkload(ctx, spend.NewWorkload{ID: id, Owner: "o", RoutingKey: "rk", Cap: 1_000_000_000}); err != nil {
		t.Fatal(err)
	}
	if err := r.spend.Workloads.AddAlias(ctx, subject, id); err != nil {
		t.Fatal(err)
	}
}

// run moves the clock by d and runs the reconciler once: the export's
// run, then the sums source's. It returns the export's run's counts.
func (r *crossRig) run(t *testing.T, d time.Duration) reconcile.Counts {
	t.Helper()
	r.clock.Advance(d)
	run, err := r.rec.Run(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.rec.Sums().Run(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	return run.Counts
}

// sum adds the classes of runs' counts this file checks.
func sum(cs ...reconcile.Counts) reconcile.Counts {
	var out reconcile.Counts
	for _, c := range cs {
		out.Matched, out.Missed, out.Unseen = out.Matched+c.Matched, out.Missed+c.Missed, out.Unseen+c.Unseen
	}
	return out
}

func (r *crossRig) total(t *testing.T, id string) int64 {
	t.Helper()
	w, err := r.spend.Workloads.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return w.Total
}

// door applies an event as the spend worker does once the door read it
// on the meters source.
func (r *crossRig) door(t *testing.T, ev providersim.UsageCloudEvent) {
	t.Helper()
	ms, err := usagein.ParseMappings([]byte(mappings))
	if err != nil {
		t.Fatal(err)
	}
	it := ms.For("meters").ReadStoredEvent(mustBody(t, ev), "meters", r.clock.Now())
	if it.Err != nil {
		t.Fatal(it.Err)
	}
	// The source is reconciled: its mapping says the export holds it.
	us := []spend.Usage{{RecordID: it.Record.RecordID, WorkloadRef: it.Record.WorkloadRef,
		Units: it.Record.Units, OccurredAt: it.Record.OccurredAt, ObservedAt: r.clock.Now(), Path: spend.PathWebhook,
		EventID: it.EventID, Source: "meters", Meter: it.Record.Meter, Unit: it.Record.Unit}}
	res, errs := r.spend.Ledger.ApplyBatch(context.Background(), us)
	if errs[0] != nil || res[0].Outcome != spend.Applied {
		t.Fatalf("door: %+v %v", res[0], errs[0])
	}
}

func mustBody(t *testing.T, ev providersim.UsageCloudEvent) []byte {
	t.Helper()
	body, _, err := providersim.CloudEventsBody([]providersim.UsageCloudEvent{ev}, false)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// pages are the pages enqueued whose dedup key starts with prefix.
func (r *crossRig) pages(t *testing.T, prefix string) []pager.Page {
	t.Helper()
	all, err := r.outbox.Pending(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []pager.Page
	for _, p := range all {
		if strings.HasPrefix(p.DedupKey, prefix) {
			out = append(out, p)
		}
	}
	return out
}

func TestARecordOnlyTheExportFoundIsCountedOnceWhenTheMeterQueryShowsIt(t *testing.T) {
	t.Parallel()
	r := newCrossRig(t)
	// Given an event OpenMeter holds and the door never got
	r.ingest(t, tokens("poll-only", "cust-a", "3", t0.Add(-50*time.Minute)))
	// When the export finds it, and the meter query shows the same usage
	r.run(t, 5*time.Minute)
	r.run(t, 5*time.Minute)
	// Then it is counted once.
	if got := r.total(t, "wl-a"); got != 3000 {
		t.Fatalf("total %d, want 3000: the record once, not again by the meter query's top-up", got)
	}
}

func TestTheMeterQueryCrossChecksWhatBothPathsCountedAtSettle(t *testing.T) {
	t.Parallel()
	r := newCrossRig(t)
	hour := t0.Add(-time.Hour)
	// Given, in one hour, an event both the door and OpenMeter got and one
	// only OpenMeter got;
	both := tokens("both", "cust-a", "2", hour.Add(10*time.Minute))
	r.door(t, both)
	r.ingest(t, both, tokens("poll-only", "cust-a", "3", hour.Add(20*time.Minute)))
	// in the hour before, an event OpenMeter counted twice (its dedupe is
	// off by default);
	dup := tokens("dup", "cust-a", "4", hour.Add(-30*time.Minute))
	r.ingest(t, dup, dup)
	// and an event of another workload that only the door got.
	r.door(t, tokens("door-only", "cust-b", "1", hour.Add(30*time.Minute)))

	// When the reconciler runs
	c := r.run(t, 5*time.Minute)
	// Then the export confirmed the webhook record it holds, found the
	// one the door missed and the duplicate once, and the meter query
	// topped up the duplicate's bucket alone: 2 + 3 in one hour, 4 twice
	// as OpenMeter shows it in the other.
	if c.Matched != 1 || c.Missed != 2 {
		t.Fatalf("counts %+v, want 1 matched and 2 missed", c)
	}
	if got := r.total(t, "wl-a"); got != 5000+8000 {
		t.Fatalf("total %d, want 13000", got)
	}

	// When both hours settle, and the webhook OpenMeter lacks passes the
	// export's horizon
	c = sum(r.run(t, 3*time.Hour), r.run(t, 5*time.Minute))
	// then the record OpenMeter lacks is paged as unseen, once,
	if c.Unseen != 1 || len(r.pages(t, "spend-unseen:")) != 1 {
		t.Fatalf("unseen %d, pages %v: want the door-only record once", c.Unseen, r.pages(t, "spend-unseen:"))
	}
	// the hour whose per-record sum is the meter query's pages nothing,
	// and the hour the query shows higher pages its gap once.
	gaps := r.pages(t, "bucket-gap#wl-a#")
	if len(gaps) != 1 {
		t.Fatalf("gap pages of wl-a %d, want 1", len(gaps))
	}
	lines := fmt.Sprint(gaps[0].Event.Payload.CustomDetails["buckets"])
	if strings.Contains(lines, hour.Format(time.RFC3339)+",") || !strings.Contains(lines, "provider=8000 webhook=4000 diff=+4000") {
		t.Fatalf("gap page of wl-a names %s, want the duplicate's hour alone", lines)
	}
	if got := r.total(t, "wl-a"); got != 13000 {
		t.Fatalf("total after settle %d, want 13000", got)
	}
}
