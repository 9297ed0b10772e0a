package localaws

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"net/http"
	"strings"
	"sync"
	"time"
)

// tokenWindow is how long DynamoDB answers for a TransactWriteItems
// client token after the call that used it completed.
const tokenWindow = 10 * time.Minute

// maxTokens bounds the tokens kept: past it the oldest are forgotten
// early, which loses fidelity only for a retry sent more than maxTokens
// transactions after its first call (the SDK retries within seconds).
const maxTokens = 100_000

// tokens are the ClientRequestTokens of TransactWriteItems calls: running
// or successful within the window, with the digest of their parameters.
type tokens struct {
	mu    sync.Mutex
	now   func() time.Time
	byKey map[string]*tokenEntry
	order []string // successful tokens, oldest completion first
}

type tokenEntry struct {
	digest  [sha256.Size]byte
	running bool
	doneAt  time.Time
}

func newTokens() *tokens { return &tokens{now: time.Now, byKey: map[string]*tokenEntry{}} }

// tokenVerdict is what a call with a token does.
type tokenVerdict int

const (
	tokenRun      tokenVerdict = iota // new: run it
	tokenDone                         // a successful call's retry: answer success, apply nothing
	tokenRunning                      // the first call still runs
	tokenMismatch                     // the same token with other parameters
)

// begin records a call's token, or says how to answer a repeat of it.
func (t *tokens) begin(token string, digest [sha256.Size]byte) tokenVerdict {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.expire()
	e := t.byKey[token]
	switch {
	case e == nil:
		t.byKey[token] = &tokenEntry{digest: digest, running: true}
		return tokenRun
	case e.digest != digest:
		return tokenMismatch
	case e.running:
		return tokenRunning
	default:
		return tokenDone
	}
}

// finish ends a call begun with tokenRun: a success answers for the
// token for the window; after a failure the token is free again, and a
// repeat runs anew.
func (t *tokens) finish(token string, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !ok {
		delete(t.byKey, token)
		return
	}
	e := t.byKey[token]
	e.running, e.doneAt = false, t.now()
	t.order = append(t.order, token)
	t.expire()
}

// expire forgets the tokens whose window has passed, and the oldest past
// maxTokens. The caller holds t.mu.
func (t *tokens) expire() {
	now, n := t.now(), 0
	for ; n < len(t.order); n++ {
		e := t.byKey[t.order[n]]
		if e != nil && !e.running && now.Sub(e.doneAt) < tokenWindow && len(t.order)-n <= maxTokens {
			break
		}
		if e != nil && !e.running {
			delete(t.byKey, t.order[n])
		}
	}
	if n > 0 {
		t.order = append(t.order[:0:0], t.order[n:]...)
	}
}

// requestDigest is the digest of a request's parameters without its
// token: the same call sent again has the same digest, whatever the order
// of its members (the SDK encodes a map in Go's random order, so a retry
// may list a Key's attributes in another order). It hashes the body as it
// scans it, without decoding it: every transaction pays for it, and
// decoding into maps cost the local DynamoDB a sixth of its time under
// load.
func requestDigest(body []byte) (token string, digest [sha256.Size]byte, err error) {
	d := &digester{b: body}
	token, h, err := d.request()
	if err != nil {
		return "", digest, err
	}
	var raw [16]byte
	binary.LittleEndian.PutUint64(raw[:8], h[0])
	binary.LittleEndian.PutUint64(raw[8:], h[1])
	return token, sha256.Sum256(raw[:]), nil
}

// hash128 is a value's digest: two 64-bit hashes under two seeds.
type hash128 [2]uint64

// digestSeeds seed the digests. They differ from one process to the
// next, as the tokens they are compared within do not outlive it.
var digestSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

// literalEnds are the bytes that end a number, true, false or null.
const literalEnds = ",:]} \t\r\n{[\""

// maxDigestDepth bounds the nesting the digester follows; DynamoDB
// itself refuses documents nested past 32 levels.
const maxDigestDepth = 64

// digester scans one JSON document and hashes it so that an object's
// members count in any order (their hashes are summed) while an array's
// elements count in theirs. Strings and numbers are hashed as written.
type digester struct {
	b     []byte
	pos   int
	depth int
}

// mix hashes a kind, raw bytes and a nested digest into one digest.
func mix(kind byte, raw []byte, sub hash128) hash128 {
	var out hash128
	var subRaw [16]byte
	binary.LittleEndian.PutUint64(subRaw[:8], sub[0])
	binary.LittleEndian.PutUint64(subRaw[8:], sub[1])
	for k, seed := range digestSeeds {
		var h maphash.Hash
		h.SetSeed(seed)
		_ = h.WriteByte(kind)
		_, _ = h.Write(raw)
		_, _ = h.Write(subRaw[:])
		out[k] = h.Sum64()
	}
	return out
}

// request scans the top-level object, taking its ClientRequestToken out.
func (d *digester) request() (string, hash128, error) {
	var token string
	h, err := d.object(func(key []byte, start int) (bool, error) {
		if string(key) != `"ClientRequestToken"` {
			return true, nil
		}
		if err := json.Unmarshal(d.b[start:d.pos], &token); err != nil {
			return false, errors.New("ClientRequestToken must be a string")
		}
		return false, nil
	})
	if err != nil {
		return "", h, err
	}
	if d.skipSpace(); d.pos != len(d.b) {
		return "", h, d.errorf("data after the request")
	}
	return token, h, nil
}

// value scans one value and returns its digest.
func (d *digester) value() (hash128, error) {
	d.skipSpace()
	if d.pos == len(d.b) {
		return hash128{}, d.errorf("unexpected end")
	}
	switch d.b[d.pos] {
	case '{':
		return d.object(nil)
	case '[':
		return d.array()
	case '"':
		start := d.pos
		if err := d.skipString(); err != nil {
			return hash128{}, err
		}
		return mix('s', d.b[start:d.pos], hash128{}), nil
	}
	start := d.pos
	for d.pos < len(d.b) && !strings.ContainsRune(literalEnds, rune(d.b[d.pos])) {
		d.pos++
	}
	if d.pos == start {
		return hash128{}, d.errorf("unexpected %q", d.b[d.pos])
	}
	return mix('l', d.b[start:d.pos], hash128{}), nil
}

// object scans an object whose '{' is next, summing its members' hashes.
// keep, when set, sees each member's key and raw value and says whether
// it counts.
func (d *digester) object(keep func(key []byte, start int) (bool, error)) (hash128, error) {
	if err := d.enter('{'); err != nil {
		return hash128{}, err
	}
	var sum hash128
	var n uint64
	err := d.members('}', func() error {
		key, err := d.key()
		if err != nil {
			return err
		}
		d.skipSpace()
		start := d.pos
		v, err := d.value()
		if err != nil {
			return err
		}
		if keep != nil {
			if ok, err := keep(key, start); !ok || err != nil {
				return err
			}
		}
		m := mix('m', key, v)
		sum[0], sum[1], n = sum[0]+m[0], sum[1]+m[1], n+1
		return nil
	})
	var count [8]byte
	binary.LittleEndian.PutUint64(count[:], n)
	return mix('o', count[:], sum), err
}

// array scans an array whose '[' is next, hashing its elements in order.
func (d *digester) array() (hash128, error) {
	if err := d.enter('['); err != nil {
		return hash128{}, err
	}
	h := mix('a', nil, hash128{})
	err := d.members(']', func() error {
		v, err := d.value()
		if err != nil {
			return err
		}
		var prev [16]byte
		binary.LittleEndian.PutUint64(prev[:8], h[0])
		binary.LittleEndian.PutUint64(prev[8:], h[1])
		h = mix('e', prev[:], v)
		return nil
	})
	return h, err
}

// enter consumes open, one level deeper.
func (d *digester) enter(open byte) error {
	d.skipSpace()
	if d.pos == len(d.b) || d.b[d.pos] != open {
		return d.errorf("want %q", open)
	}
	if d.depth++; d.depth > maxDigestDepth {
		return d.errorf("nested deeper than %d", maxDigestDepth)
	}
	d.pos++
	return nil
}

// members runs each for every comma-separated member up to close.
func (d *digester) members(close byte, each func() error) error {
	defer func() { d.depth-- }()
	if d.skipSpace(); d.pos < len(d.b) && d.b[d.pos] == close {
		d.pos++
		return nil
	}
	for {
		if err := each(); err != nil {
			return err
		}
		d.skipSpace()
		if d.pos == len(d.b) {
			return d.errorf("unexpected end")
		}
		switch d.b[d.pos] {
		case ',':
			d.pos++
		case close:
			d.pos++
			return nil
		default:
			return d.errorf("want ',' or %q", close)
		}
	}
}

// key scans a member's key and its ':' and returns the key as written.
func (d *digester) key() ([]byte, error) {
	d.skipSpace()
	start := d.pos
	if err := d.skipString(); err != nil {
		return nil, err
	}
	key := d.b[start:d.pos]
	if d.skipSpace(); d.pos == len(d.b) || d.b[d.pos] != ':' {
		return nil, d.errorf("want ':'")
	}
	d.pos++
	return key, nil
}

// skipString moves past the string whose '"' is next.
func (d *digester) skipString() error {
	if d.pos == len(d.b) || d.b[d.pos] != '"' {
		return d.errorf("want a string")
	}
	for d.pos++; d.pos < len(d.b); d.pos++ {
		switch d.b[d.pos] {
		case '\\':
			d.pos++
		case '"':
			d.pos++
			return nil
		}
	}
	return d.errorf("unterminated string")
}

func (d *digester) skipSpace() {
	for d.pos < len(d.b) && (d.b[d.pos] == ' ' || d.b[d.pos] == '\t' || d.b[d.pos] == '\r' || d.b[d.pos] == '\n') {
		d.pos++
	}
}

func (d *digester) errorf(format string, args ...any) error {
	return fmt.Errorf("invalid JSON at offset %d: %s", d.pos, fmt.Sprintf(format, args...))
}

// transactWriteOnce runs TransactWriteItems with DynamoDB's client token
// idempotency: a call repeated with the token of a successful one within
// 10 minutes answers success and applies nothing; the same token with
// other parameters is IdempotentParameterMismatchException; a repeat of a
// call still running is TransactionInProgressException (which the SDK
// retries).
func (d *dynamoFront) transactWriteOnce(body []byte) (int, []byte) {
	token, digest, err := requestDigest(body)
	if err != nil {
		return apiError(http.StatusBadRequest, "SerializationException", err.Error())
	}
	if token == "" {
		return d.transactWrite(body)
	}
	switch d.tokens.begin(token, digest) {
	case tokenDone:
		return http.StatusOK, []byte("{}")
	case tokenMismatch:
		return apiError(http.StatusBadRequest, "IdempotentParameterMismatchException",
			"The request uses the same client token as a previous, but non-identical request.")
	case tokenRunning:
		return apiError(http.StatusBadRequest, "TransactionInProgressException",
			"The transaction with the given request token is already in progress.")
	}
	status, out := d.transactWrite(body)
	d.tokens.finish(token, status == http.StatusOK)
	return status, out
}
