package provider_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookline/hookline/pkg/provider"
	"github.com/hookline/hookline/pkg/providersim"
)

func loadEvent(t *testing.T, name string) provider.PagerEvent {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var ev provider.PagerEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

func newTestPager(t *testing.T, url string, attempts int) *provider.Pager {
	t.Helper()
	p, err := provider.NewPager(provider.PagerConfig{URL: url, RoutingKey: "R0UTINGKEY", Timeout: time.Second,
		MaxAttempts: attempts, BaseBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPagerEventValidate(t *testing.T) {
	trigger := loadEvent(t, "pager_trigger.json")
	tests := []struct {
		name   string
		edit   func(*provider.PagerEvent)
		wantOK bool
	}{
		{name: "fixture trigger", edit: func(*provider.PagerEvent) {}, wantOK: true},
		{name: "resolve with dedup key", edit: func(e *provider.PagerEvent) {
			*e = provider.PagerEvent{RoutingKey: "k", EventAction: provider.PagerResolve, DedupKey: "d"}
		}, wantOK: true},
		{name: "no routing key", edit: func(e *provider.PagerEvent) { e.RoutingKey = "" }},
		{name: "bad action", edit: func(e *provider.PagerEvent) { e.EventAction = "page" }},
		{name: "no summary", edit: func(e *provider.PagerEvent) { e.Payload.Summary = "" }},
		{name: "summary too long", edit: func(e *provider.PagerEvent) { e.Payload.Summary = strings.Repeat("x", 1025) }},
		{name: "no source", edit: func(e *provider.PagerEvent) { e.Payload.Source = "" }},
		{name: "bad severity", edit: func(e *provider.PagerEvent) { e.Payload.Severity = "high" }},
		{name: "dedup key too long", edit: func(e *provider.PagerEvent) { e.DedupKey = strings.Repeat("d", 256) }},
		{name: "resolve without dedup key", edit: func(e *provider.PagerEvent) {
			*e = provider.PagerEvent{RoutingKey: "k", EventAction: provider.PagerResolve}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Given an event
			ev := trigger
			tt.edit(&ev)
			// When it is validated
			err := ev.Validate()
			// Then only valid events pass
			if tt.wantOK != (err == nil) {
				t.Fatalf("err = %v, want ok %v", err, tt.wantOK)
			}
			if err != nil && !errors.Is(err, provider.ErrInvalidEvent) {
				t.Fatalf("err = %v, want ErrInvalidEvent", err)
			}
		})
	}
}

func TestPageReachesTheSink(t *testing.T) {
	// Given a pager sink
	got := make(chan provider.PagerEvent, 2)
	sim := startSim(t, providersim.Config{OnPage: func(ev provider.PagerEvent) { got <- ev }})
	p := newTestPager(t, sim.URL(), 1)
	ev := loadEvent(t, "pager_trigger.json")
	ev.RoutingKey = ""

	// When a trigger and its resolve are paged
	if err := p.Page(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	if err := p.Page(context.Background(), loadEvent(t, "pager_resolve.json")); err != nil {
		t.Fatal(err)
	}

	// Then the sink recorded both with every field, routing key filled in
	pages := sim.Pages()
	if len(pages) != 2 || len(got) != 2 {
		t.Fatalf("pages = %d callbacks = %d, want 2", len(pages), len(got))
	}
	first := pages[0]
	if first.RoutingKey != "R0UTINGKEY" || first.DedupKey != "spend-cap/workload-7/pause" ||
		first.Payload.Severity != provider.SeverityCritical || first.Payload.CustomDetails["workload"] != "workload-7" ||
		!first.Payload.Timestamp.Equal(time.Date(2026, 11, 30, 3, 17, 0, 0, time.UTC)) {
		t.Fatalf("page = %+v", first)
	}
	if pages[1].EventAction != provider.PagerResolve {
		t.Fatalf("second page = %+v", pages[1])
	}
}

func TestPageErrors(t *testing.T) {
	tests := []struct {
		name          string
		status        int
		attempts      int
		wantRetriable bool
		wantCalls     int
	}{
		{name: "503 is retriable and retried", status: 503, attempts: 3, wantRetriable: true, wantCalls: 3},
		{name: "429 is retriable", status: 429, attempts: 2, wantRetriable: true, wantCalls: 2},
		{name: "400 is permanent", status: 400, attempts: 3, wantCalls: 1},
		{name: "403 is permanent", status: 403, attempts: 3, wantCalls: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Given a pager that answers with one status
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				calls.Add(1)
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(`{"status":"invalid event","message":"Event object is invalid"}`))
			}))
			defer srv.Close()
			p := newTestPager(t, srv.URL, tt.attempts)

			// When an event is paged
			err := p.Page(context.Background(), loadEvent(t, "pager_trigger.json"))

			// Then the error is typed
			var pe *provider.PageError
			if !errors.As(err, &pe) || pe.StatusCode != tt.status || provider.IsRetriable(err) != tt.wantRetriable {
				t.Fatalf("err = %v, want PageError status %d retriable %v", err, tt.status, tt.wantRetriable)
			}
			if !tt.wantRetriable && !errors.Is(err, provider.ErrRejected) {
				t.Fatalf("err = %v, want ErrRejected", err)
			}
			if int(calls.Load()) != tt.wantCalls || pe.Attempts != tt.wantCalls {
				t.Fatalf("calls = %d attempts = %d, want %d", calls.Load(), pe.Attempts, tt.wantCalls)
			}
		})
	}
}

func TestPageInvalidEventIsNotSent(t *testing.T) {
	// Given a sink and an event without a summary
	sim := startSim(t, providersim.Config{})
	p := newTestPager(t, sim.URL(), 3)
	ev := loadEvent(t, "pager_trigger.json")
	ev.Payload.Summary = ""

	// When it is paged
	err := p.Page(context.Background(), ev)

	// Then it fails permanently before any request
	if !errors.Is(err, provider.ErrInvalidEvent) || provider.IsRetriable(err) || sim.PagerRequests() != 0 {
		t.Fatalf("err = %v requests = %d, want invalid event and no request", err, sim.PagerRequests())
	}
}

func TestPageWhileSinkIsDown(t *testing.T) {
	// Given a sink that is down
	sim := startSim(t, providersim.Config{})
	sim.SetPagerDown(true)
	p := newTestPager(t, sim.URL(), 2)
	ev := loadEvent(t, "pager_trigger.json")

	// When an event is paged
	err := p.Page(context.Background(), ev)

	// Then the failure is retriable and nothing was recorded
	if !provider.IsRetriable(err) || len(sim.Pages()) != 0 || sim.PagerRequests() != 2 {
		t.Fatalf("err = %v pages = %d requests = %d", err, len(sim.Pages()), sim.PagerRequests())
	}

	// When the sink recovers and the outbox retries
	sim.SetPagerDown(false)
	if err := p.Page(context.Background(), ev); err != nil {
		t.Fatal(err)
	}

	// Then the page is recorded once
	if len(sim.Pages()) != 1 {
		t.Fatalf("pages = %d, want 1", len(sim.Pages()))
	}
}
