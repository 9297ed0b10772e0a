package idempotency

import (
	"testing"
	"time"
)

func TestCacheEvictsLeastRecentlyUsed(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	far := now.Add(time.Hour)
	c := newCache(2, time.Minute)
	// Given a full cache where "a" was used after "b",
	c.put(Record{Key: "a", ExpiresAt: far}, now)
	c.put(Record{Key: "b", ExpiresAt: far}, now)
	if _, ok := c.get("a", now); !ok {
		t.Fatal("a missing")
	}
	// when "c" is added,
	c.put(Record{Key: "c", ExpiresAt: far}, now)
	// then "b" is evicted and the size stays bounded.
	if _, ok := c.get("b", now); ok {
		t.Error("b survived eviction")
	}
	for _, k := range []string{"a", "c"} {
		if _, ok := c.get(k, now); !ok {
			t.Errorf("%s evicted", k)
		}
	}
	if c.len() != 2 {
		t.Errorf("len = %d, want 2", c.len())
	}
}

func TestCacheEntryValidity(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	tests := []struct {
		name       string
		expiresAt  time.Time
		at         time.Duration // lookup time, from now
		wantCached bool
	}{
		{name: "within ttl", expiresAt: now.Add(time.Hour), at: 59 * time.Second, wantCached: true},
		{name: "at ttl", expiresAt: now.Add(time.Hour), at: time.Minute},
		{name: "retention ends before ttl", expiresAt: now.Add(10 * time.Second), at: 10 * time.Second},
		{name: "before retention ends", expiresAt: now.Add(10 * time.Second), at: 9 * time.Second, wantCached: true},
		{name: "already past retention", expiresAt: now.Add(-time.Second), at: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCache(4, time.Minute)
			// Given a completed record cached now,
			c.put(Record{Key: "k", PayloadHash: "h", Result: []byte("r"), ExpiresAt: tt.expiresAt}, now)
			// when it is looked up later, then it is there only while valid.
			_, ok := c.get("k", now.Add(tt.at))
			if ok != tt.wantCached {
				t.Errorf("cached = %v, want %v", ok, tt.wantCached)
			}
		})
	}
}

func TestCacheReturnsCopies(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	c := newCache(1, time.Minute)
	result := []byte("abc")
	c.put(Record{Key: "k", Result: result, ExpiresAt: now.Add(time.Hour)}, now)
	// Given a caller that mutates both its input and a returned result,
	result[0] = 'x'
	e, _ := c.get("k", now)
	e.result[1] = 'y'
	// then the cached bytes are unchanged.
	if e2, _ := c.get("k", now); string(e2.result) != "abc" {
		t.Errorf("cached result = %q, want abc", e2.result)
	}
}
