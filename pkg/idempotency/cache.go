package idempotency

import (
	"container/list"
	"sync"
	"time"
)

// cache is a bounded LRU of completed keys, private to one execution
// environment. A completed record never changes until its retention
// passes, so an entry is valid until min(cached+ttl, the record's
// ExpiresAt). Only completed records are cached: an in-progress record can
// change at any time.
type cache struct {
	mu      sync.Mutex
	size    int
	ttl     time.Duration
	order   *list.List // front is most recently used
	entries map[string]*list.Element
}

type cacheEntry struct {
	key         string
	payloadHash string
	result      []byte
	validUntil  time.Time
}

func newCache(size int, ttl time.Duration) *cache {
	return &cache{size: size, ttl: ttl, order: list.New(), entries: make(map[string]*list.Element, size)}
}

// get returns the entry for key if it is still valid at now, and drops it
// otherwise. The result is a copy.
func (c *cache) get(key string, now time.Time) (cacheEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		return cacheEntry{}, false
	}
	e := el.Value.(*cacheEntry)
	if !now.Before(e.validUntil) {
		c.order.Remove(el)
		delete(c.entries, key)
		return cacheEntry{}, false
	}
	c.order.MoveToFront(el)
	out := *e
	out.result = clone(e.result)
	return out, true
}

// put caches a completed record seen at now, evicting the least recently
// used entry when full.
func (c *cache) put(rec Record, now time.Time) {
	validUntil := now.Add(c.ttl)
	if rec.ExpiresAt.Before(validUntil) {
		validUntil = rec.ExpiresAt
	}
	if !now.Before(validUntil) {
		return
	}
	e := &cacheEntry{key: rec.Key, payloadHash: rec.PayloadHash, result: clone(rec.Result), validUntil: validUntil}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[rec.Key]; ok {
		el.Value = e
		c.order.MoveToFront(el)
		return
	}
	c.entries[rec.Key] = c.order.PushFront(e)
	for c.order.Len() > c.size {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.entries, last.Value.(*cacheEntry).key)
	}
}

// len returns the number of entries, valid or not.
func (c *cache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}
