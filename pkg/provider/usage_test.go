package provider_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/pkg/provider"
)

var t0 = time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)

// addRecords adds n records one second apart, published at once.
func addRecords(t *testing.T, sim *providersim.Sim, n int) {
	t.Helper()
	for i := range n {
		rec := provider.UsageRecord{
			RecordID:    fmt.Sprintf("ur_%05d", i),
			WorkloadRef: fmt.Sprintf("workload-%d", i%10),
			Units:       int64(i%7 + 1),
			OccurredAt:  t0.Add(time.Duration(i) * time.Second),
		}
		if err := sim.Usage.AddUsage(rec, providersim.UsageOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// collect lists usage and returns every record and the page count.
func collect(ctx context.Context, c *provider.Client, since, until time.Time) ([]provider.UsageRecord, int, error) {
	var all []provider.UsageRecord
	pages := 0
	err := c.ListUsage(ctx, since, until, func(recs []provider.UsageRecord) error {
		pages++
		all = append(all, recs...)
		return nil
	})
	return all, pages, err
}

func newUsageClient(t *testing.T, url string, limit int) *provider.Client {
	t.Helper()
	c, err := provider.New(provider.Config{BaseURL: url, Timeout: 2 * time.Second, MaxAttempts: 3,
		BaseBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond, UsagePageLimit: limit})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestListUsagePagesThroughTenThousandRecords(t *testing.T) {
	// Given 10,000 published records
	clock := providersim.NewManualClock(t0.Add(24 * time.Hour))
	sim := startSim(t, providersim.Config{Now: clock.Now})
	addRecords(t, sim, 10_000)
	c := newUsageClient(t, sim.URL(), 500)

	// When the whole day is listed
	all, pages, err := collect(context.Background(), c, t0, t0.Add(24*time.Hour))

	// Then every record arrives once, in (published_at, record_id) order
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 10_000 || pages != 20 {
		t.Fatalf("records = %d pages = %d, want 10000 and 20", len(all), pages)
	}
	seen := make(map[string]bool, len(all))
	for i, r := range all {
		if seen[r.RecordID] {
			t.Fatalf("record %s twice", r.RecordID)
		}
		seen[r.RecordID] = true
		if i > 0 && r.PublishedAt.Before(all[i-1].PublishedAt) {
			t.Fatalf("record %d out of order", i)
		}
	}
}

func TestListUsageWindowIsHalfOpen(t *testing.T) {
	// Given records published every second
	clock := providersim.NewManualClock(t0.Add(time.Hour))
	sim := startSim(t, providersim.Config{Now: clock.Now})
	addRecords(t, sim, 100)
	c := newUsageClient(t, sim.URL(), 7)

	// When two adjacent windows are listed
	a, _, errA := collect(context.Background(), c, t0, t0.Add(50*time.Second))
	b, _, errB := collect(context.Background(), c, t0.Add(50*time.Second), t0.Add(time.Hour))

	// Then they split the records without overlap or gap
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	if len(a) != 50 || len(b) != 50 || a[49].RecordID != "ur_00049" || b[0].RecordID != "ur_00050" {
		t.Fatalf("windows = %d + %d records", len(a), len(b))
	}
}

func TestListUsageExportFailures(t *testing.T) {
	tests := []struct {
		name        string
		fault       providersim.ExportFault
		wantErr     bool
		wantPage    int
		wantRecords int // records handed over before the end
	}{
		{name: "transient failure mid-way is retried", fault: providersim.ExportFault{Page: 3, Times: 2}, wantRecords: 1000},
		{name: "lasting failure mid-way surfaces", fault: providersim.ExportFault{Page: 3, Times: -1}, wantErr: true, wantPage: 3, wantRecords: 200},
		{name: "rate limit on first page surfaces", fault: providersim.ExportFault{Page: 1, Times: -1, Status: 429}, wantErr: true, wantPage: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Given 1,000 records in pages of 100 and a failing export
			sim := startSim(t, providersim.Config{Now: providersim.NewManualClock(t0.Add(time.Hour)).Now})
			addRecords(t, sim, 1000)
			sim.Usage.FailExport(tt.fault)
			c := newUsageClient(t, sim.URL(), 100)

			// When everything is listed
			all, _, err := collect(context.Background(), c, t0, t0.Add(time.Hour))

			// Then the failure is retried or surfaces as a typed error
			if len(all) != tt.wantRecords {
				t.Fatalf("records = %d, want %d", len(all), tt.wantRecords)
			}
			if !tt.wantErr {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ee *provider.ExportError
			if !errors.As(err, &ee) || !errors.Is(err, provider.ErrExportFailed) || !provider.IsRetriable(err) {
				t.Fatalf("err = %v, want a retriable *ExportError", err)
			}
			if ee.Page != tt.wantPage || ee.Attempts != 3 || ee.StatusCode == 0 {
				t.Fatalf("export error = %+v, want page %d after 3 attempts", ee, tt.wantPage)
			}
		})
	}
}

func TestListUsageLatePublication(t *testing.T) {
	// Given a record that occurred at 03:00 but is published five minutes later
	clock := providersim.NewManualClock(t0.Add(time.Minute))
	sim := startSim(t, providersim.Config{Now: clock.Now})
	late := provider.UsageRecord{RecordID: "ur_late", WorkloadRef: "workload-7", Units: 40, OccurredAt: t0}
	if err := sim.Usage.AddUsage(late, providersim.UsageOptions{PublishDelay: 5 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	c := newUsageClient(t, sim.URL(), 0)
	ctx := context.Background()

	// When a poll at 03:01 reads up to its present
	first, _, err := collect(ctx, c, t0.Add(-time.Hour), clock.Now())
	if err != nil {
		t.Fatal(err)
	}

	// Then the record is not there yet
	if len(first) != 0 {
		t.Fatalf("first poll = %v, want nothing", first)
	}

	// When the next poll starts from the previous cursor at 03:10
	cursor := clock.Now()
	clock.Advance(9 * time.Minute)
	second, _, err := collect(ctx, c, cursor, clock.Now())
	if err != nil {
		t.Fatal(err)
	}

	// Then it finds the record, by its publication time
	if len(second) != 1 || second[0].RecordID != "ur_late" || !second[0].PublishedAt.Equal(t0.Add(5*time.Minute)) {
		t.Fatalf("second poll = %+v, want the late record", second)
	}
}

func TestListUsageCallbackErrorStops(t *testing.T) {
	// Given 300 records in pages of 100
	sim := startSim(t, providersim.Config{Now: providersim.NewManualClock(t0.Add(time.Hour)).Now})
	addRecords(t, sim, 300)
	c := newUsageClient(t, sim.URL(), 100)
	stop := errors.New("ledger down")
	pages := 0

	// When the callback fails on the second page
	err := c.ListUsage(context.Background(), t0, t0.Add(time.Hour), func([]provider.UsageRecord) error {
		pages++
		if pages == 2 {
			return stop
		}
		return nil
	})

	// Then listing stops there with the callback's error
	if !errors.Is(err, stop) || pages != 2 {
		t.Fatalf("err = %v after %d pages, want ledger down after 2", err, pages)
	}
}

func TestUsagePageFixture(t *testing.T) {
	// Given a recorded export page
	data, err := os.ReadFile("testdata/usage_page.json")
	if err != nil {
		t.Fatal(err)
	}
	// When it is decoded
	var pg provider.UsagePage
	if err := json.Unmarshal(data, &pg); err != nil {
		t.Fatal(err)
	}
	// Then every field lands
	r := pg.Records[0]
	if len(pg.Records) != 2 || r.RecordID != "ur_0001" || r.WorkloadRef != "workload-7" || r.Units != 12 ||
		!r.PublishedAt.Equal(time.Date(2026, 11, 30, 3, 12, 30, 0, time.UTC)) || pg.NextPageToken == "" {
		t.Fatalf("page = %+v", pg)
	}
}
