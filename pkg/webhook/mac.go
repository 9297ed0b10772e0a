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
}

// macState is one keyed HMAC and the buffer its sum is written to.
type macState struct {
	h   hash.Hash
	sum [sha256.Size]byte
}

func newMACKey(key []byte) *macKey {
	key = bytes.Clone(key)
	k := &macKey{}
	k.pool.New = func() any { return &macState{h: hmac.New(sha256.New, key)} }
	return k
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
	c.mu.RLock()
	k, ok := c.keys[secret]
	c.mu.RUnlock()
	if ok {
		return k, nil
	}
	raw, err := decode(secret)
	if err != nil {
		return nil, err
	}
	k = newMACKey(raw)
	c.mu.Lock()
	if c.keys == nil || len(c.keys) >= maxCachedKeys {
		c.keys = map[string]*macKey{}
	}
	c.keys[secret] = k
	c.mu.Unlock()
	return k, nil
}
