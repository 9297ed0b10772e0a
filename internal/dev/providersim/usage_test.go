package providersim_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/pkg/provider"
)

var t0 = time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)

// export fetches one raw export page.
func export(t *testing.T, sim *providersim.Sim, q url.Values) (int, provider.UsagePage) {
	t.Helper()
	resp, err := http.Get(sim.URL() + "/v1/usage?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var pg provider.UsagePage
	if resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(&pg); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode, pg
}

func window(since, until time.Time) url.Values {
	return url.Values{"since": {since.Format(time.RFC3339)}, "until": {until.Format(time.RFC3339)}}
}

func TestExportOrderAndPaging(t *testing.T) {
	// Given records added out of order, two sharing a publication time
	clock := providersim.NewManualClock(t0.Add(time.Hour))
	sim := start(t, providersim.Config{Now: clock.Now, UsagePageSize: 2})
	for _, r := range []struct {
		id string
		at time.Duration
	}{{"c", 3}, {"b", 1}, {"a", 1}, {"d", 2}, {"e", 4}} {
		rec := provider.UsageRecord{RecordID: r.id, WorkloadRef: "w", Units: 1, OccurredAt: t0.Add(r.at * time.Second)}
		if err := sim.Usage.AddUsage(rec, providersim.UsageOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// When the export is paged with the default page size
	var ids []string
	q := window(t0, t0.Add(time.Hour))
	for page := 1; ; page++ {
		status, pg := export(t, sim, q)
		if status != http.StatusOK || page > 5 {
			t.Fatalf("page %d: status %d", page, status)
		}
		for _, r := range pg.Records {
			ids = append(ids, r.RecordID)
		}
		if pg.NextPageToken == "" {
			break
		}
		q.Set("page_token", pg.NextPageToken)
	}

	// Then records come by (published_at, record_id)
	if fmt.Sprint(ids) != "[a b d c e]" {
		t.Fatalf("order = %v", ids)
	}

	// And a page token is a position, not an offset: a record inserted
	// before the cursor neither repeats nor shifts the next page
	q.Del("page_token")
	_, first := export(t, sim, q)
	if err := sim.Usage.AddUsage(provider.UsageRecord{RecordID: "0", WorkloadRef: "w", Units: 1, OccurredAt: t0},
		providersim.UsageOptions{}); err != nil {
		t.Fatal(err)
	}
	q.Set("page_token", first.NextPageToken)
	_, second := export(t, sim, q)
	if len(second.Records) != 2 || second.Records[0].RecordID != "d" {
		t.Fatalf("second page = %+v, want d first", second.Records)
	}
	if got := sim.Usage.Records(); len(got) != 6 || got[0].RecordID != "0" {
		t.Fatalf("usage = %v", got)
	}
}

func TestExportRequestValidation(t *testing.T) {
	tests := []struct {
		name  string
		query url.Values
	}{
		{name: "no since", query: url.Values{"until": {t0.Format(time.RFC3339)}}},
		{name: "bad until", query: url.Values{"since": {t0.Format(time.RFC3339)}, "until": {"tomorrow"}}},
		{name: "limit zero", query: func() url.Values { q := window(t0, t0.Add(time.Hour)); q.Set("limit", "0"); return q }()},
		{name: "limit too large", query: func() url.Values { q := window(t0, t0.Add(time.Hour)); q.Set("limit", "1001"); return q }()},
		{name: "bad token", query: func() url.Values { q := window(t0, t0.Add(time.Hour)); q.Set("page_token", "!!"); return q }()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Given a simulator
			sim := start(t, providersim.Config{})
			// When a malformed export request arrives
			status, _ := export(t, sim, tt.query)
			// Then it is refused
			if status != http.StatusBadRequest {
				t.Fatalf("status = %d, want 400", status)
			}
		})
	}
}

func TestExportPublishDelay(t *testing.T) {
	// Given a record published ten minutes after it occurred
	clock := providersim.NewManualClock(t0)
	sim := start(t, providersim.Config{Now: clock.Now})
	rec := provider.UsageRecord{RecordID: "r1", WorkloadRef: "w", Units: 5, OccurredAt: t0}
	if err := sim.Usage.AddUsage(rec, providersim.UsageOptions{PublishDelay: 10 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	q := window(t0.Add(-time.Hour), t0.Add(time.Hour))
	tests := []struct {
		name    string
		advance time.Duration
		want    int
	}{
		{name: "not yet published", advance: 9 * time.Minute, want: 0},
		{name: "published", advance: time.Minute, want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// When the clock moves and the export is read
			clock.Advance(tt.advance)
			_, pg := export(t, sim, q)
			// Then the record shows only once published
			if len(pg.Records) != tt.want {
				t.Fatalf("records = %d, want %d", len(pg.Records), tt.want)
			}
		})
	}
}

func TestExportFaults(t *testing.T) {
	// Given 30 records in pages of 10 and a fault on page 2 twice
	sim := start(t, providersim.Config{Now: providersim.NewManualClock(t0.Add(time.Hour)).Now, UsagePageSize: 10})
	for i := range 30 {
		rec := provider.UsageRecord{RecordID: fmt.Sprintf("r%02d", i), WorkloadRef: "w", Units: 1, OccurredAt: t0.Add(time.Duration(i) * time.Second)}
		if err := sim.Usage.AddUsage(rec, providersim.UsageOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	sim.Usage.FailExport(providersim.ExportFault{Page: 2, Times: 2, Status: 502})
	q := window(t0, t0.Add(time.Hour))

	// When page 1 is read, then page 2 three times
	status, pg := export(t, sim, q)
	if status != 200 || len(pg.Records) != 10 {
		t.Fatalf("page 1 = %d %d", status, len(pg.Records))
	}
	q.Set("page_token", pg.NextPageToken)
	var statuses []int
	for range 3 {
		s, _ := export(t, sim, q)
		statuses = append(statuses, s)
	}

	// Then page 2 fails twice and then succeeds
	if fmt.Sprint(statuses) != "[502 502 200]" || sim.Usage.ExportRequests() != 4 {
		t.Fatalf("statuses = %v requests = %d", statuses, sim.Usage.ExportRequests())
	}
}

func TestAddUsageValidation(t *testing.T) {
	sim, err := providersim.New(providersim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ok := provider.UsageRecord{RecordID: "r1", WorkloadRef: "w", Units: 1, OccurredAt: t0}
	if err := sim.Usage.AddUsage(ok, providersim.UsageOptions{}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		rec  provider.UsageRecord
		opts providersim.UsageOptions
	}{
		{name: "duplicate id", rec: ok},
		{name: "no id", rec: provider.UsageRecord{WorkloadRef: "w", OccurredAt: t0}},
		{name: "no workload", rec: provider.UsageRecord{RecordID: "r2", OccurredAt: t0}},
		{name: "no time", rec: provider.UsageRecord{RecordID: "r3", WorkloadRef: "w"}},
		{name: "negative delay", rec: provider.UsageRecord{RecordID: "r4", WorkloadRef: "w", OccurredAt: t0},
			opts: providersim.UsageOptions{PublishDelay: -time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := sim.Usage.AddUsage(tt.rec, tt.opts); !errors.Is(err, providersim.ErrInvalidUsage) {
				t.Fatalf("err = %v, want ErrInvalidUsage", err)
			}
		})
	}
}
