package reconcile_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/internal/emf"
	"github.com/hookline/hookline/internal/pager"
	"github.com/hookline/hookline/internal/reconcile"
	"github.com/hookline/hookline/internal/spend"
	"github.com/hookline/hookline/pkg/provider"
)

// t0 is the start of every test's manual clock.
var t0 = time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)

const (
	horizon     = 30 * time.Minute
	deferMaxAge = 30 * time.Minute
	reconRoute  = "rk-recon"
)

// fixture is local AWS, the provider simulator (export and pager sink), the
// spend ledger with its outbox, and a reconciler, all on one manual clock.
type fixture struct {
	env     *localaws.Env
	clock   *providersim.ManualClock
	sim     *providersim.Sim
	outbox  *pager.Outbox
	spend   *spend.Spend
	client  *provider.Client
	metrics *lockedBuffer
	rec     *reconcile.Reconciler
}

type options struct {
	pageSize    int
	concurrency int
	export      func(reconcile.Export) reconcile.Export
	faults      localaws.Faults // injected into local AWS when on
	// exportMaxAge is the export source's reach (0: the default 72 h).
	exportMaxAge time.Duration
}

func newFixture(t testing.TB, o options) *fixture {
	t.Helper()
	if o.pageSize == 0 {
		o.pageSize = 100
	}
	f := &fixture{clock: providersim.NewManualClock(t0), metrics: &lockedBuffer{}}
	if o.faults.On() {
		f.env = localaws.StartFaultsForTest(t, o.faults)
	} else {
		f.env = localaws.StartForTest(t)
	}
	var err error
	f.sim, err = providersim.New(providersim.Config{Now: f.clock.Now, UsagePageSize: o.pageSize})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.sim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.sim.Close() })
	sender, err := pager.NewHTTPSender(pager.HTTPSenderConfig{URL: f.sim.URL()})
	if err != nil {
		t.Fatal(err)
	}
	ledger := f.env.TableName("LedgerTable")
	f.outbox, err = pager.NewOutbox(pager.OutboxConfig{DB: f.env.DynamoDB, Table: ledger, Sender: sender, Now: f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	f.spend, err = spend.New(spend.Config{DB: f.env.DynamoDB, LedgerTable: ledger,
		WorkloadsTable: f.env.TableName("WorkloadsTable"), Pages: f.outbox,
		Webhook:    spend.PathContract{ExpectedArrival: time.Minute, MaxAge: deferMaxAge, Interval: 5 * time.Minute},
		Poll:       spend.PathContract{ExpectedArrival: 15 * time.Minute, MaxAge: deferMaxAge, Interval: 5 * time.Minute},
		ReconOwner: "billing-oncall", ReconRoutingKey: reconRoute, Now: f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	f.client, err = provider.New(provider.Config{BaseURL: f.sim.URL(), MaxAttempts: 3,
		BaseBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	f.rec = f.reconciler(t, o)
	return f
}

// reconciler builds another reconciler on the same state, as a second
// Lambda instance would be.
func (f *fixture) reconciler(t testing.TB, o options) *reconcile.Reconciler {
	t.Helper()
	var export reconcile.Export = f.client
	if o.export != nil {
		export = o.export(export)
	}
	r, err := reconcile.New(reconcile.Config{Spend: f.spend, Export: export, DB: f.env.DynamoDB,
		Table: f.env.TableName("LedgerTable"), Pages: f.outbox, Flush: f.outbox, ReconRoutingKey: reconRoute,
		Horizon: horizon, Concurrency: o.concurrency, ExportMaxAge: o.exportMaxAge,
		Metrics: emf.New(f.metrics, "hookline").WithClock(f.clock.Now), Now: f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (f *fixture) workload(t testing.TB, id string, capUnits int64) {
	t.Helper()
	if _, err := f.spend.Workloads.CreateWorkload(context.Background(), spend.NewWorkload{ID: id, Owner: "team-" + id,
		RoutingKey: "rk-" + id, Cap: capUnits}); err != nil {
		t.Fatal(err)
	}
}

// usage adds a record to the provider's export.
func (f *fixture) usage(t testing.TB, id, ref string, units int64, occurred time.Time, opts providersim.UsageOptions) {
	t.Helper()
	if err := f.sim.Usage.AddUsage(provider.UsageRecord{RecordID: id, WorkloadRef: ref, Units: units, OccurredAt: occurred}, opts); err != nil {
		t.Fatal(err)
	}
}

// webhook applies a record as the spend worker does for a webhook.
func (f *fixture) webhook(t testing.TB, id, ref string, units int64, occurred time.Time) spend.Result {
	t.Helper()
	res, err := f.spend.Ledger.Apply(context.Background(), spend.Usage{RecordID: id, WorkloadRef: ref, Units: units,
		OccurredAt: occurred, ObservedAt: f.clock.Now(), Path: spend.PathWebhook, EventID: providersim.UsageEventID(id)})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func (f *fixture) run(t testing.TB) reconcile.Run {
	t.Helper()
	run, err := f.rec.Run(context.Background(), "")
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return run
}

func (f *fixture) total(t testing.TB, id string) int64 {
	t.Helper()
	w, err := f.spend.Workloads.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return w.Total
}

func (f *fixture) cursor(t testing.TB) reconcile.Cursor {
	t.Helper()
	c, found, err := f.rec.Store().Cursor(context.Background())
	if err != nil || !found {
		t.Fatalf("cursor: found=%v err=%v", found, err)
	}
	return c
}

// pages returns the outbox pages (pending and sent) whose dedup key starts
// with prefix.
func (f *fixture) pages(t testing.TB, prefix string) []pager.Page {
	t.Helper()
	pending, err := f.outbox.Pending(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sent, err := f.outbox.Sent(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []pager.Page
	for _, p := range append(pending, sent...) {
		if strings.HasPrefix(p.DedupKey, prefix) {
			out = append(out, p)
		}
	}
	return out
}

// delivered returns the pages the pager sink received with the class.
func (f *fixture) delivered(class string) []pager.Event {
	var out []pager.Event
	for _, ev := range f.sim.Pager.Pages() {
		if ev.Payload.Class == class {
			out = append(out, ev)
		}
	}
	return out
}

// metricValues returns every value of an EMF metric, optionally only from
// lines whose dimension dim has value val.
func (f *fixture) metricValues(t testing.TB, name, dim, val string) []float64 {
	t.Helper()
	var out []float64
	sc := bufio.NewScanner(bytes.NewReader(f.metrics.Bytes()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("EMF line %q: %v", sc.Text(), err)
		}
		if dim != "" && line[dim] != val {
			continue
		}
		switch v := line[name].(type) {
		case float64:
			out = append(out, v)
		case []any:
			for _, x := range v {
				out = append(out, x.(float64))
			}
		}
	}
	return out
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// gatedExport holds every ListUsage until n runs have reached it, so that
// all of them have read the same cursor.
type gatedExport struct {
	next reconcile.Export
	wg   *sync.WaitGroup
}

func (g gatedExport) ListUsage(ctx context.Context, since, until time.Time, fn func([]provider.UsageRecord) error) error {
	g.wg.Done()
	g.wg.Wait()
	return g.next.ListUsage(ctx, since, until, fn)
}

func isExport(err error) bool { return errors.Is(err, reconcile.ErrExport) }

func sum(units ...int64) int64 {
	var s int64
	for _, u := range units {
		s += u
	}
	return s
}

func id(prefix string, i int) string { return fmt.Sprintf("%s-%05d", prefix, i) }
