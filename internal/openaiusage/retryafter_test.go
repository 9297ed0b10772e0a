package openaiusage_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/hookline/hookline/internal/openaiusage"
)

func TestAHugeRetryAfterWaitsTheCap(t *testing.T) {
	ours := `{"object":"organization.usage.completions.result","input_tokens":3,"output_tokens":1,"project_id":"proj_abc"}`
	tests := []struct {
		name         string
		header, text string
	}{
		{name: "99999999999 seconds", header: "Retry-After", text: "99999999999"},
		{name: "retry-after-ms 1e300", header: "Retry-After-Ms", text: "1e300"},
		{name: "retry-after-ms 1e19", header: "Retry-After-Ms", text: "1e19"},
		{name: "an HTTP date years ahead", header: "Retry-After", text: "Fri, 01 Jan 2100 00:00:00 GMT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Given an OpenAI that first answers 429 naming a wait too long
			// to represent,
			var n atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				if n.Add(1) == 1 {
					w.Header().Set(tt.header, tt.text)
					w.WriteHeader(http.StatusTooManyRequests)
					return
				}
				fmt.Fprint(w, hourPage(0, false, "null", ours))
			}))
			t.Cleanup(srv.Close)
			var waits []time.Duration
			r, err := openaiusage.New(openaiusage.Config{BaseURL: srv.URL, Key: "sk-admin-k", Rate: rate.Inf,
				Backoff: fixedBackoff(time.Second),
				Sleep:   func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }})
			if err != nil {
				t.Fatal(err)
			}
			// when an hour is read,
			_, err = r.Sums(t.Context(), usageQuery(tokens, day0, day0.Add(time.Hour), time.Hour))
			// then the retry waits the documented cap, not the backoff's
			// second as if no header had come.
			if err != nil || len(waits) != 1 || waits[0] != openaiusage.MaxRetryAfter {
				t.Fatalf("err %v after waits %v; want one wait of %v", err, waits, openaiusage.MaxRetryAfter)
			}
		})
	}
}
