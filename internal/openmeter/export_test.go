package openmeter_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/internal/emf"
	"github.com/hookline/hookline/internal/openmeter"
	"github.com/hookline/hookline/internal/pager"
	"github.com/hookline/hookline/internal/usagein"
	"github.com/hookline/hookline/pkg/provider"
)

const mappings = `{"meters": {"format": "cloudevents", "usage_types": ["com.example.tokens"], "scale": 1000, "unit": "units", "max_age": "840h"}}`

var t0 = time.Date(2026, 11, 3, 12, 0, 0, 0, time.UTC)

// rig is the OpenMeter face on a manual clock and a client of it.
type rig struct {
	clock *providersim.ManualClock
	om    *providersim.OpenMeter
	c     *openmeter.Client
	pages *fakePages
}

func newRig(t *testing.T, mod func(*openmeter.Config)) *rig {
	t.Helper()
	clock := providersim.NewManualClock(t0)
	om := providersim.NewOpenMeter(providersim.OpenMeterConfig{Now: clock.Now, APIKey: "om_key"})
	if err := om.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { om.Close() })
	ms, err := usagein.ParseMappings([]byte(mappings))
	if err != nil {
		t.Fatal(err)
	}
	pages := &fakePages{}
	cfg := openmeter.Config{BaseURL: om.URL(), APIKey: "om_key", Source: "meters", Mapping: ms.For("meters"),
		Pages: pages, RoutingKey: "rk", Wait: func(context.Context, time.Duration) error { return nil }}
	if mod != nil {
		mod(&cfg)
	}
	c, err := openmeter.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &rig{clock: clock, om: om, c: c, pages: pages}
}

type fakePages struct {
	mu  sync.Mutex
	evs []pager.Event
}

func (p *fakePages) Enqueue(_ context.Context, ev pager.Event) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range p.evs {
		if e.DedupKey == ev.DedupKey {
			return false, nil
		}
	}
	p.evs = append(p.evs, ev)
	return true, nil
}

func (p *fakePages) keys() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, e := range p.evs {
		out = append(out, e.DedupKey)
	}
	return out
}

func tokens(id, subject, value string, at time.Time) providersim.UsageCloudEvent {
	return providersim.UsageCloudEvent{Source: "/meter/a", ID: id, Type: "com.example.tokens", Subject: subject, Time: at, Value: value}
}

func (r *rig) ingest(t *testing.T, evs ...providersim.UsageCloudEvent) {
	t.Helper()
	for _, ev := range evs {
		if _, err := r.om.Ingest(ev); err != nil {
			t.Fatal(err)
		}
	}
}

func (r *rig) list(t *testing.T, since, until time.Time) []provider.UsageRecord {
	t.Helper()
	var out []provider.UsageRecord
	if err := r.c.ListUsage(context.Background(), since, until, func(recs []provider.UsageRecord) error {
		out = append(out, recs...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func ids(recs []provider.UsageRecord) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.RecordID)
	}
	return out
}

func key(id string) string { return usagein.CloudEventKey("meters", "/meter/a", id) }

func TestListUsageReadsAWindowAsTheDoorReadsItsEvents(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	// Given events ingested a minute apart, one of another type, one of zero
	r.ingest(t, tokens("e-1", "wl-a", "12.5", t0.Add(-time.Minute)))
	r.clock.Advance(time.Minute)
	login := tokens("e-login", "wl-a", "1", t0)
	login.Type = "com.example.login"
	r.ingest(t, tokens("e-2", "wl-b", "2", t0), login, tokens("e-zero", "wl-a", "0", t0))
	r.clock.Advance(time.Minute)
	r.ingest(t, tokens("e-3", "wl-a", "3", t0.Add(time.Minute)))
	r.clock.Advance(10 * time.Minute)
	// When the window [t0+1m, t0+2m) is read (reaching back 2m by default)
	got := r.list(t, t0.Add(time.Minute), t0.Add(2*time.Minute))
	// Then the usage records come oldest first, keyed, scaled and metered
	// as at the door
	want := []provider.UsageRecord{
		{RecordID: key("e-1"), WorkloadRef: "wl-a", Units: 12500, OccurredAt: t0.Add(-time.Minute), PublishedAt: t0,
			Source: "meters", Meter: "com.example.tokens", Unit: "units"},
		{RecordID: key("e-2"), WorkloadRef: "wl-b", Units: 2000, OccurredAt: t0, PublishedAt: t0.Add(time.Minute),
			Source: "meters", Meter: "com.example.tokens", Unit: "units"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("records:\n got %+v\nwant %+v", got, want)
	}
	// and the face refused nothing: the filter was written as its spec says.
	if ref := r.om.Refusals(); len(ref) > 0 {
		t.Fatalf("refused: %v", ref)
	}
}

func TestAWindowPairInOneFilterObjectIsRefused(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	for _, tc := range []struct {
		name, filter string
		status       int
	}{
		{"pair in one object", `{"ingestedAt":{"$gte":"2026-11-03T12:00:00Z","$lt":"2026-11-03T13:00:00Z"}}`, 400},
		{"and of two", openmeter.WindowFilter(t0, t0.Add(time.Hour)), 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, r.om.URL()+openmeter.EventsPath+"?filter="+url.QueryEscape(tc.filter), nil)
			req.Header.Set("Authorization", "Bearer om_key")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
		})
	}
}

func TestPagesThatChangeUnderTheCursor(t *testing.T) {
	t.Parallel()
	r := newRig(t, func(c *openmeter.Config) { c.PageLimit = 2 })
	// Given five events, read two a page,
	for i, id := range []string{"p-1", "p-2", "p-3", "p-4", "p-5"} {
		r.ingest(t, tokens(id, "wl-a", "1", t0.Add(time.Duration(i)*time.Second)))
	}
	// and two more stored between two pages of the listing: one older than
	// the cursor, one newer.
	if err := r.om.IngestBetweenPages(tokens("late-old", "wl-a", "1", t0.Add(-time.Hour)), tokens("late-new", "wl-a", "1", t0.Add(time.Hour))); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(5 * time.Minute)
	// When the window is read
	got := ids(r.list(t, t0, t0.Add(time.Minute)))
	// Then every event stored before the listing is read once, and the
	// older one stored between pages too; the newer one waits,
	want := []string{key("late-old"), key("p-1"), key("p-2"), key("p-3"), key("p-4"), key("p-5")}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("first listing: %v\nwant %v", got, want)
	}
	// and the next listing over the window finds it.
	if again := ids(r.list(t, t0, t0.Add(5*time.Minute))); !slices.Contains(again, key("late-new")) || len(again) != 7 {
		t.Fatalf("second listing: %d records %v", len(again), again)
	}
}

func TestARecordStoredAfterItsWindowClosedIsFoundAndTheLagKept(t *testing.T) {
	t.Parallel()
	var metrics bytes.Buffer
	r := newRig(t, func(c *openmeter.Config) { c.Metrics = emf.New(&metrics, "hookline") })
	// Given a record ingested at t0 that is stored only 5 minutes later
	if _, err := r.om.IngestLate(tokens("slow", "wl-a", "4", t0), 5*time.Minute); err != nil {
		t.Fatal(err)
	}
	// When a window that holds it is read before it is stored
	r.clock.Advance(3 * time.Minute)
	if got := r.list(t, t0.Add(-time.Minute), t0.Add(time.Minute)); len(got) != 0 {
		t.Fatalf("read before it was stored: %v", ids(got))
	}
	// Then the next window, which starts after its ingestedAt, still finds
	// it: the reads reach back by the configured lag,
	r.clock.Advance(5 * time.Minute)
	if got := ids(r.list(t, t0.Add(time.Minute), t0.Add(6*time.Minute))); !slices.Equal(got, []string{key("slow")}) {
		t.Fatalf("after store: %v", got)
	}
	// the lag measured (5m) is kept as the new reach,
	if r.c.Lag() != 5*time.Minute {
		t.Fatalf("lag kept %s, want 5m", r.c.Lag())
	}
	// and it paged once, for growing past the configured 2m.
	r.list(t, t0.Add(time.Minute), t0.Add(6*time.Minute))
	if keys := r.pages.keys(); !slices.Equal(keys, []string{openmeter.LagDedupKey("meters", 5*time.Minute)}) {
		t.Fatalf("pages %v", keys)
	}
	// Every listing measured it: 0 before the record was stored, 300 s after.
	if got := strings.Count(metrics.String(), `"OpenMeterStoreLag":300`); got != 2 || !strings.Contains(metrics.String(), `"OpenMeterStoreLag":0`) {
		t.Fatalf("lag metric lines:\n%s", metrics.String())
	}
}

func TestAnEventTheDoorWouldRefuseIsInvalid(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	r.ingest(t, tokens("fine", "wl-a", "0.0001", t0))
	r.clock.Advance(5 * time.Minute)
	got := r.list(t, t0, t0.Add(time.Minute))
	if len(got) != 1 || got[0].Invalid == nil || got[0].Invalid.Field != "data.value" || got[0].RecordID != key("fine") {
		t.Fatalf("records %+v", got)
	}
}

// stub answers every events call with body and status.
func stub(t *testing.T, status int, body string) *openmeter.Client {
	t.Helper()
	var calls int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		w.WriteHeader(status)
		w.Write([]byte(strings.ReplaceAll(body, "CALL", string(rune('a'+calls%2)))))
	}))
	t.Cleanup(srv.Close)
	ms, _ := usagein.ParseMappings([]byte(mappings))
	c, err := openmeter.New(openmeter.Config{BaseURL: srv.URL, Source: "meters", Mapping: ms.For("meters"), PageLimit: 1,
		Attempts: 2, Wait: func(context.Context, time.Duration) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestAnAnswerOutsideTheSpecFailsTheListing(t *testing.T) {
	t.Parallel()
	item := `{"event":{"specversion":"1.0","id":"x","source":"/s","type":"com.example.tokens","subject":"wl","time":"2026-11-03T12:00:00Z","data":{"value":1}},"ingestedAt":"2026-11-03T12:00:00Z","storedAt":"2026-11-03T12:00:00Z"}`
	for _, tc := range []struct {
		name, body string
		status     int
		want       error
	}{
		{"full page without cursor", `{"items":[` + item + `]}`, 200, openmeter.ErrBadResponse},
		{"cursor repeats", `{"items":[` + item + `],"nextCursor":"same"}`, 200, provider.ErrPageLoop},
		{"more items than asked", `{"items":[` + item + `,` + item + `],"nextCursor":"c"}`, 200, openmeter.ErrBadResponse},
		{"not json", `<html>`, 200, openmeter.ErrBadResponse},
		{"refused", `{"title":"Bad Request","detail":"only one filter"}`, 400, openmeter.ErrStatus},
		{"down", `{}`, 503, openmeter.ErrStatus},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := stub(t, tc.status, tc.body)
			err := c.ListUsage(context.Background(), t0, t0.Add(time.Minute), func([]provider.UsageRecord) error { return nil })
			var ee *provider.ExportError
			if !errors.As(err, &ee) || !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want an ExportError wrapping %v", err, tc.want)
			}
			if tc.status == 503 && ee.Attempts != 2 || tc.status == 400 && ee.Attempts != 1 {
				t.Fatalf("attempts %d for status %d", ee.Attempts, tc.status)
			}
		})
	}
}

func TestConfigIsValidated(t *testing.T) {
	t.Parallel()
	_, err := openmeter.New(openmeter.Config{BaseURL: "ftp://x", PageLimit: 500, Workload: "team"})
	for _, want := range []string{"BaseURL", "Source", "Mapping", "Workload", "PageLimit"} {
		if !errors.Is(err, openmeter.ErrInvalidConfig) || !strings.Contains(err.Error(), want) {
			t.Fatalf("err %v: want %s named", err, want)
		}
	}
}

func providersimMeter() providersim.OpenMeterMeter {
	return providersim.OpenMeterMeter{Slug: "tokens_total", EventType: "com.example.tokens", Aggregation: "SUM"}
}
