package pager

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func testEvent(dedup string) Event {
	return Event{RoutingKey: "rk-test", EventAction: ActionTrigger, DedupKey: dedup,
		Payload: &Payload{Summary: "spend cap action=pause workload=w1", Source: "hookline-spend",
			Severity: SeverityCritical, Timestamp: time.Date(2026, 11, 30, 3, 17, 0, 0, time.UTC),
			Component: "w1", Group: "team-a", Class: "spend_cap",
			CustomDetails: map[string]any{"attributed": 1012}}}
}

func TestHTTPSenderStatuses(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		retryAfter string
		wantErr    bool
		retriable  bool
		wantWait   time.Duration
	}{
		{name: "accepted", status: http.StatusAccepted},
		{name: "rate limited", status: http.StatusTooManyRequests, retryAfter: "7", wantErr: true, retriable: true, wantWait: 7 * time.Second},
		{name: "unavailable", status: http.StatusServiceUnavailable, wantErr: true, retriable: true},
		{name: "server error", status: http.StatusInternalServerError, wantErr: true, retriable: true},
		{name: "bad request", status: http.StatusBadRequest, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// given an Events API answering tc.status
			var got map[string]any
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/v2/enqueue" || r.Method != http.MethodPost {
					t.Errorf("request %s %s, want POST /v2/enqueue", r.Method, r.URL.Path)
				}
				raw, _ := io.ReadAll(r.Body)
				if err := json.Unmarshal(raw, &got); err != nil {
					t.Errorf("body is not JSON: %v", err)
				}
				if tc.retryAfter != "" {
					w.Header().Set("Retry-After", tc.retryAfter)
				}
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(`{"status":"x","message":"Event object is invalid"}`))
			}))
			defer srv.Close()
			s, err := NewHTTPSender(HTTPSenderConfig{URL: srv.URL})
			if err != nil {
				t.Fatal(err)
			}

			// when an event is sent
			err = s.Send(context.Background(), testEvent("k1"))

			// then the outcome is classified and the body is in wire format
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if err != nil && IsRetriable(err) != tc.retriable {
				t.Errorf("IsRetriable = %v, want %v", IsRetriable(err), tc.retriable)
			}
			var se *SendError
			if err != nil && errors.As(err, &se) && se.RetryAfter != tc.wantWait {
				t.Errorf("RetryAfter = %v, want %v", se.RetryAfter, tc.wantWait)
			}
			p, _ := got["payload"].(map[string]any)
			if got["routing_key"] != "rk-test" || got["event_action"] != "trigger" || got["dedup_key"] != "k1" ||
				p["severity"] != "critical" || p["source"] != "hookline-spend" || p["component"] != "w1" ||
				p["timestamp"] != "2026-11-30T03:17:00Z" || p["custom_details"] == nil {
				t.Errorf("body = %v", got)
			}
		})
	}
}

func TestHTTPSenderNetworkFailureIsRetriable(t *testing.T) {
	// given a server that is gone
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	s, err := NewHTTPSender(HTTPSenderConfig{URL: url, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// when sending, then the failure is retriable
	err = s.Send(context.Background(), testEvent("k1"))
	if err == nil || !IsRetriable(err) {
		t.Fatalf("err = %v, want a retriable error", err)
	}
}

func TestEventValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*Event)
		wantErr bool
	}{
		{name: "valid", mutate: func(*Event) {}},
		{name: "no routing key", mutate: func(e *Event) { e.RoutingKey = "" }, wantErr: true},
		{name: "no dedup key", mutate: func(e *Event) { e.DedupKey = "" }, wantErr: true},
		{name: "bad severity", mutate: func(e *Event) { e.Payload.Severity = "loud" }, wantErr: true},
		{name: "trigger without payload", mutate: func(e *Event) { e.Payload = nil }, wantErr: true},
		{name: "bad action", mutate: func(e *Event) { e.EventAction = "page" }, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// given an event broken by mutate
			ev := testEvent("k1")
			tc.mutate(&ev)
			// when validated, then only broken events fail with ErrInvalidEvent
			err := ev.Validate()
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if err != nil && !errors.Is(err, ErrInvalidEvent) {
				t.Errorf("err = %v, want ErrInvalidEvent", err)
			}
		})
	}
}
