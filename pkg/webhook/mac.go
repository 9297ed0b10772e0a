package webhook

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"hash"
	"sync"
	"unsafe"
)

// macKey is one decoded secret with a pool of keyed HMAC-SHA256 states, so
// that verifying a request allocates nothing for its MAC.
type macKey struct {
	pool sync.Pool // of *macState
	// label is what a signature names its key by (Braintree's public
	// key); empty for the other schemes.
	label string
}

// macState is one keyed HMAC and the buffer its sum is written to.
type macState struct {
	h   hash.Hash
	sum [sha256.Size]byte
}

func newMACKey(key []byte) *macKey { return newHashKey(key, sha256.New) }

// newHashKey is newMACKey for another hash; its sum must fit
// [sha256.Size] bytes.
func newHashKey(key []byte, h func() hash.Hash) *macKey {
	key = bytes.Clone(key)
	k := &macKey{}
	k.pool.New = func() any { return &macState{h: hmac.New(h, key)} }
	return k
}

// of returns the MAC of the concatenated parts. The result is
// valid until st is put back.
func (st *macState) of(parts ...[]byte) []byte {
	for _, p := range parts {
		st.h.Write(p)
	}
	return st.h.Sum(st.sum[:0])
}

// matches reports whether any key's MAC of parts equals sig, comparing
// in constant time.
func matches(keys []*macKey, sig []byte, parts ...[]byte) bool {
	for _, k := range keys {
		st := k.get()
		ok := hmac.Equal(st.of(parts...), sig)
		k.put(st)
		if ok {
			return true
		}
	}
	return false
}

// macKeys wraps raw keys, for tests and one-off checks.
func macKeys(raw ...[]byte) []*macKey {
	out := make([]*macKey, len(raw))
	for i, r := range raw {
		out[i] = newMACKey(r)
	}
	return out
}

func (k *macKey) get() *macState {
	st := k.pool.Get().(*macState)
	st.h.Reset()
	return st
}

func (k *macKey) put(st *macState) { k.pool.Put(st) }

var dot = []byte{'.'}

// standard returns the v1 Standard Webhooks MAC of id, timestamp text and
// body: HMAC-SHA256 over "id.timestamp.body". The result is valid until the
// state is put back.
func (st *macState) standard(id, timestamp string, body []byte) []byte {
	st.h.Write(stringBytes(id))
	st.h.Write(dot)
	st.h.Write(stringBytes(timestamp))
	st.h.Write(dot)
	st.h.Write(body)
	return st.h.Sum(st.sum[:0])
}

// stripe returns the v1 Stripe MAC: HMAC-SHA256 over "timestamp.body".
func (st *macState) stripe(timestamp string, body []byte) []byte {
	st.h.Write(stringBytes(timestamp))
	st.h.Write(dot)
	st.h.Write(body)
	return st.h.Sum(st.sum[:0])
}

// stringBytes returns the bytes of s without copying them. The caller must
// not write to the result; hashing and comparing only read it.
func stringBytes(s string) []byte {
	if s == "" {
		return nil
	}
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// keyCache holds the decoded keys of the secrets a verifier has seen, so a
// secret is decoded and keyed once, not per request. It is bounded: a
// rotation adds entries, and past maxCachedKeys the cache starts over.
type keyCache struct {
	mu   sync.RWMutex
	keys map[string]*macKey
}

const maxCachedKeys = 64

// lookup returns the cached key of secret, building it with decode on a
// miss. Errors are not cached.
func (c *keyCache) lookup(secret string, decode func(string) ([]byte, error)) (*macKey, error) {
	if k, ok := c.cached(secret); ok {
		return k, nil
	}
	raw, err := decode(secret)
	if err != nil {
		return nil, err
	}
	return c.store(secret, newMACKey(raw)), nil
}

// lookupKey is lookup for a preset, whose build makes the whole key.
func (c *keyCache) lookupKey(secret string, build func(string) (*macKey, error)) (*macKey, error) {
	if k, ok := c.cached(secret); ok {
		return k, nil
	}
	k, err := build(secret)
	if err != nil {
		return nil, err
	}
	return c.store(secret, k), nil
}

// cached returns the key of secret if it is in the cache.
func (c *keyCache) cached(secret string) (*macKey, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	k, ok := c.keys[secret]
	return k, ok
}

// store caches k under secret and returns it.
func (c *keyCache) store(secret string, k *macKey) *macKey {
	c.mu.Lock()
	if c.keys == nil || len(c.keys) >= maxCachedKeys {
		c.keys = map[string]*macKey{}
	}
	c.keys[secret] = k
	c.mu.Unlock()
	return k
}
