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
	s, err := reconcile.NewSums(reconcile.SumsConfig{Ledger: r.spend.Recon, Registry: r.spend.Workloads, Sources: srcs,
		Readers: map[string]sums.Reader{"om": reader}, DB: env.DynamoDB, Table: ledger, Now: r.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	r.rec, err = reconcile.New(reconcile.Config{Ledger: r.spend.Recon, Registry: r.spend.Workloads, Export: r.c,
		DB: env.DynamoDB, Table: ledger, Pages: r.outbox, ReconRoutingKey: "rk", Now: r.clock.Now, Sums: s})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := r.spend.Workloads.CreateWorkload(ctx, spend.NewWorkload{ID: "wl-a", Owner: "o", Route: "rk", Cap: 1_000_000_000}); err != nil {
		t.Fatal(err)
	}
	if err := r.spend.Workloads.AddAlias(ctx, "cust-a", "wl-a"); err != nil {
		t.Fatal(err)
	}
	return r
}

// run moves the clock by d and runs the reconciler once: the export's
// run, then the sums source's.
func (r *crossRig) run(t *testing.T, d time.Duration) {
	t.Helper()
	r.clock.Advance(d)
	if _, err := r.rec.Run(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := r.rec.Sums().Run(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
}

func (r *crossRig) total(t *testing.T) int64 {
	t.Helper()
	w, err := r.spend.Workloads.Get(context.Background(), "wl-a")
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
	if _, err := r.spend.Ledger.Apply(context.Background(), spend.Usage{RecordID: it.Record.RecordID, WorkloadRef: it.Record.WorkloadRef,
		Units: it.Record.Units, OccurredAt: it.Record.OccurredAt, ObservedAt: r.clock.Now(), Path: spend.PathWebhook,
		EventID: it.EventID, Source: "meters", Meter: it.Record.Meter, Unit: it.Record.Unit}); err != nil {
		t.Fatal(err)
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

func (r *crossRig) gapPages(t *testing.T) []pager.Page {
	t.Helper()
	all, err := r.outbox.Pending(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []pager.Page
	for _, p := range all {
		if strings.HasPrefix(p.DedupKey, "bucket-gap#") {
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
	if got := r.total(t); got != 3000 {
		t.Fatalf("total %d, want 3000: the record once, not again by the meter query's top-up", got)
	}
}
