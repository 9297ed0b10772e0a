package localaws

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"net/http"
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
// may list a Key's attributes in another order).
func requestDigest(body []byte) (token string, digest [sha256.Size]byte, err error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var fields map[string]any
	if err := dec.Decode(&fields); err != nil {
		return "", digest, err
	}
	if raw, ok := fields["ClientRequestToken"]; ok {
		if token, ok = raw.(string); !ok {
			return "", digest, errors.New("ClientRequestToken must be a string")
		}
		delete(fields, "ClientRequestToken")
	}
	canon, err := json.Marshal(fields) // map keys sorted at every level
	if err != nil {
		return "", digest, err
	}
	return token, sha256.Sum256(canon), nil
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
