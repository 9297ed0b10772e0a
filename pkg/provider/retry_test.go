package provider

import (
	"context"
	"net/http"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 30, 3, 17, 0, 0, time.UTC)
	tests := []struct {
		name  string
		value string
		want  time.Duration
	}{
		{name: "missing", value: "", want: 0},
		{name: "seconds", value: "120", want: 2 * time.Minute},
		{name: "zero seconds", value: "0", want: 0},
		{name: "padded seconds", value: " 5 ", want: 5 * time.Second},
		{name: "http date in the future", value: "Mon, 30 Nov 2026 03:17:45 GMT", want: 45 * time.Second},
		{name: "http date in the past", value: "Mon, 30 Nov 2026 03:16:00 GMT", want: 0},
		{name: "rfc 850 date", value: "Monday, 30-Nov-26 03:18:00 GMT", want: time.Minute},
		{name: "negative", value: "-5", want: 0},
		{name: "fraction", value: "1.5", want: 0},
		{name: "garbage", value: "soon", want: 0},
		{name: "huge is clamped not dropped", value: "99999999999999999999", want: (1 << 20) * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Given a Retry-After header
			h := http.Header{}
			if tt.value != "" {
				h.Set("Retry-After", tt.value)
			}
			// When it is parsed
			got := retryAfter(h, now)
			// Then the wait matches
			if got != tt.want {
				t.Fatalf("retryAfter(%q) = %v, want %v", tt.value, got, tt.want)
			}
		})
	}
}

func TestBackoffGrowsAndIsCapped(t *testing.T) {
	p := newPolicy(time.Second, 10, 10*time.Millisecond, 80*time.Millisecond)
	tests := []struct {
		name     string
		attempt  int
		min, max time.Duration
	}{
		{name: "first", attempt: 1, min: 5 * time.Millisecond, max: 10 * time.Millisecond},
		{name: "second", attempt: 2, min: 10 * time.Millisecond, max: 20 * time.Millisecond},
		{name: "fourth", attempt: 4, min: 40 * time.Millisecond, max: 80 * time.Millisecond},
		{name: "capped", attempt: 9, min: 40 * time.Millisecond, max: 80 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 200 {
				if d := p.backoff(tt.attempt); d < tt.min || d > tt.max {
					t.Fatalf("backoff(%d) = %v, want in [%v, %v]", tt.attempt, d, tt.min, tt.max)
				}
			}
		})
	}
}

func TestWaitHonoursRetryAfterWithinLimits(t *testing.T) {
	p := newPolicy(time.Second, 4, 10*time.Millisecond, time.Second)
	tests := []struct {
		name   string
		asked  time.Duration
		budget time.Duration // 0: no deadline
		want   time.Duration
		wantOK bool
	}{
		{name: "asked wait is honoured", asked: 500 * time.Millisecond, want: 500 * time.Millisecond, wantOK: true},
		{name: "asked above max hands back", asked: 2 * time.Second, wantOK: false},
		{name: "asked beyond deadline hands back", asked: 500 * time.Millisecond, budget: 100 * time.Millisecond, wantOK: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			if tt.budget > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.budget)
				defer cancel()
			}
			got, ok := p.wait(ctx, 1, tt.asked)
			if ok != tt.wantOK || (ok && got != tt.want) {
				t.Fatalf("wait = %v %v, want %v %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}
