package idempotency

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"time"
	"unicode/utf8"
)

// Defaults for [Config]. DefaultRetention is explained in the package
// documentation.
const (
	DefaultInProgressTimeout = 60 * time.Second
	DefaultDeadlineMargin    = 35 * time.Second
	DefaultRetention         = 35 * 24 * time.Hour
	DefaultCacheTTL          = 5 * time.Minute
)

// Limits on what a [Registry] accepts.
const (
	// MaxKeyLen is the longest caller key, in bytes. DynamoDB allows 2048
	// bytes for a partition key; the namespace needs some of them.
	MaxKeyLen = 1024
	// MaxResultSize is the largest result, in bytes. A DynamoDB item holds at
	// most 400 KB, and the rest of the record needs room.
	MaxResultSize = 300 << 10
)

var namespaceRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Config configures [New]. Zero durations take the defaults above.
type Config struct {
	// Store holds the records: [NewDynamoDB] in production, [NewMemory] in
	// tests. Required.
	Store Store
	// Namespace prefixes every key ("payments" stores "payments#<key>"). It
	// is a stable name chosen by the caller, never derived from code, so
	// that renaming a function does not forget every key. Required: 1 to 64
	// letters, digits, '.', '_' or '-', starting with a letter or digit.
	Namespace string
	// InProgressTimeout is how long a claim holds its key before another
	// worker may take it over. It must exceed the longest time the protected
	// work can take. A context deadline shortens it (see [Registry.Claim]).
	InProgressTimeout time.Duration
	// DeadlineMargin is added to a context deadline before it caps the
	// in-progress window. It covers clock skew between workers and what a
	// request already in flight at the deadline may still do: a payment
	// provider may commit a charge after its client gave up and show it in
	// a lookup later still (its settle horizon, 30 s by default in package
	// payments). Default 35 s.
	DeadlineMargin time.Duration
	// Retention is how long a key counts after it was claimed or completed.
	// It must exceed the longest redelivery path.
	Retention time.Duration
	// CacheSize bounds the per-process cache of completed keys; 0 turns the
	// cache off.
	CacheSize int
	// CacheTTL bounds how long a cached completed key is trusted.
	CacheTTL time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives warnings about mismatches and lost claims; nil
	// discards them. Keys are logged, payloads and results never are.
	Logger *slog.Logger
}

// withDefaults returns c with zero fields set to their defaults.
func (c Config) withDefaults() Config {
	c.InProgressTimeout = cmp.Or(c.InProgressTimeout, DefaultInProgressTimeout)
	c.DeadlineMargin = cmp.Or(c.DeadlineMargin, DefaultDeadlineMargin)
	c.Retention = cmp.Or(c.Retention, DefaultRetention)
	c.CacheTTL = cmp.Or(c.CacheTTL, DefaultCacheTTL)
	c.Logger = cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Validate reports every problem with c at once. Zero durations are valid:
// they take the defaults.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	if c.Store == nil {
		errs = append(errs, errors.New("Store is required"))
	}
	if !namespaceRE.MatchString(c.Namespace) {
		errs = append(errs, fmt.Errorf("Namespace %q must be 1-64 of [A-Za-z0-9._-], starting with a letter or digit", c.Namespace))
	}
	if c.InProgressTimeout < 0 {
		errs = append(errs, fmt.Errorf("InProgressTimeout %s is negative", c.InProgressTimeout))
	}
	if c.DeadlineMargin < 0 {
		errs = append(errs, fmt.Errorf("DeadlineMargin %s is negative", c.DeadlineMargin))
	}
	if c.Retention < 0 {
		errs = append(errs, fmt.Errorf("Retention %s is negative", c.Retention))
	} else if c.Retention <= c.InProgressTimeout {
		errs = append(errs, fmt.Errorf("Retention %s must exceed InProgressTimeout %s", c.Retention, c.InProgressTimeout))
	}
	if c.CacheSize < 0 {
		errs = append(errs, fmt.Errorf("CacheSize %d is negative", c.CacheSize))
	}
	if c.CacheTTL < 0 {
		errs = append(errs, fmt.Errorf("CacheTTL %s is negative", c.CacheTTL))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
	}
	return nil
}

// Registry claims keys before work and records results after it. It is safe
// for concurrent use; build one per process and share it.
type Registry struct {
	cfg   Config
	store Store
	now   func() time.Time
	log   *slog.Logger
	cache *cache // nil when CacheSize is 0
}

// New returns a Registry for cfg.
func New(cfg Config) (*Registry, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	r := &Registry{cfg: cfg, store: cfg.Store, now: cfg.Now, log: cfg.Logger}
	if cfg.CacheSize > 0 {
		r.cache = newCache(cfg.CacheSize, cfg.CacheTTL)
	}
	return r, nil
}

// Status is the outcome of [Registry.Claim].
type Status int

// Outcomes of a claim.
const (
	// StatusClaimed: the caller holds the key and must do the work, then call
	// [Registry.Complete] or [Registry.Release] with [Claim.Token].
	StatusClaimed Status = iota + 1
	// StatusAlreadyCompleted: the work was done; [Claim.Result] is its stored
	// result. Reply with it and do nothing else.
	StatusAlreadyCompleted
	// StatusInProgress: another worker holds the key until
	// [Claim.HeldUntil]. Do not do the work; retry the message later.
	StatusInProgress
	// StatusPayloadMismatch: the key was used for a different payload. It is a
	// permanent error of the request, never a duplicate.
	StatusPayloadMismatch
)

// String returns the outcome's name.
func (s Status) String() string {
	switch s {
	case StatusClaimed:
		return "claimed"
	case StatusAlreadyCompleted:
		return "already_completed"
	case StatusInProgress:
		return "in_progress"
	case StatusPayloadMismatch:
		return "payload_mismatch"
	}
	return fmt.Sprintf("status(%d)", int(s))
}

// Claim is the result of [Registry.Claim].
type Claim struct {
	Status Status
	// Token fences the holder of a [StatusClaimed] key. Pass it to
	// [Registry.Complete] or [Registry.Release].
	Token string
	// Result is the stored result of a [StatusAlreadyCompleted] key.
	Result []byte
	// HeldUntil is when the claim may be taken over: the caller's own for
	// [StatusClaimed], the other holder's for [StatusInProgress].
	HeldUntil time.Time
	// CompletedAt is when a [StatusAlreadyCompleted] key was completed.
	CompletedAt time.Time
	// Takeover is true for a [StatusClaimed] key that replaced an earlier record:
	// an expired claim whose holder may have acted before it died. The
	// caller must check for that effect (e.g. look the charge up) before
	// acting again.
	Takeover bool
	// Attempt numbers a [StatusClaimed] key's claims within its retention: 1 for
	// the first. Every earlier attempt's holder may have acted, so a caller
	// with Attempt > 1 checks for their effects before acting.
	Attempt int
}

// Key returns the stored key for a caller's key: the namespace, "#", key.
func (r *Registry) Key(key string) string { return r.cfg.Namespace + "#" + key }

// Claim claims key for the payload whose [Hash] is payloadHash, with one
// conditional write. The write succeeds for a new key, a key past its
// retention, or an in-progress claim for the same payload whose holder's
// window has passed (a takeover); otherwise the existing record decides the
// outcome. A cached completed key is answered without the store.
//
// The claim is held until the earlier of now+InProgressTimeout and ctx's
// deadline plus DeadlineMargin. A deadline is a promise that the work stops
// by then (Lambda ends the invocation at its deadline), so a redelivery need
// not wait out the whole window once the holder is provably gone; without a
// deadline the window alone decides.
//
// Only infrastructure failures ([ErrUnavailable]) and bad input
// ([ErrInvalidInput]) are errors.
func (r *Registry) Claim(ctx context.Context, key, payloadHash string) (Claim, error) {
	if err := checkKey(key); err != nil {
		return Claim{}, fmt.Errorf("idempotency: claim: %w", err)
	}
	if !validHash(payloadHash) {
		return Claim{}, fmt.Errorf("idempotency: claim %s: payload hash is not a lower-case hex SHA-256: %w", key, ErrInvalidInput)
	}
	stored := r.Key(key)
	now := r.now()
	if r.cache != nil {
		if e, ok := r.cache.get(stored, now); ok {
			if e.payloadHash != payloadHash {
				r.log.WarnContext(ctx, "idempotency: payload mismatch", "key", stored, "state", StateCompleted, "cached", true)
				return Claim{Status: StatusPayloadMismatch}, nil
			}
			return Claim{Status: StatusAlreadyCompleted, Result: e.result}, nil
		}
	}
	rec := Record{
		Key:         stored,
		State:       StateInProgress,
		Token:       rand.Text(),
		PayloadHash: payloadHash,
		HeldUntil:   r.heldUntil(ctx, now),
		ExpiresAt:   r.expiresAt(now),
		ClaimedAt:   millis(now),
	}
	cur, claimed, err := r.store.Claim(ctx, rec, now)
	if err != nil {
		return Claim{}, &StoreError{Op: "claim", Key: stored, Err: err}
	}
	// The blocking record may be this very claim: the SDK retried a put
	// whose first response was lost. Tokens are random, so it is ours.
	// Whether that first put replaced an earlier claim is then unknown, so
	// it counts as a takeover: the caller checks before acting.
	if claimed {
		attempt := NextAttempt(cur, cur.Key != "", now)
		return Claim{Status: StatusClaimed, Token: rec.Token, HeldUntil: rec.HeldUntil, Takeover: cur.Key != "", Attempt: attempt}, nil
	}
	if cur.State == StateInProgress && cur.Token == rec.Token {
		return Claim{Status: StatusClaimed, Token: rec.Token, HeldUntil: rec.HeldUntil, Takeover: true, Attempt: cur.Attempt}, nil
	}
	return r.outcome(ctx, cur, payloadHash, now), nil
}

// outcome classifies the record that blocked a claim.
func (r *Registry) outcome(ctx context.Context, cur Record, payloadHash string, now time.Time) Claim {
	if cur.PayloadHash != payloadHash {
		r.log.WarnContext(ctx, "idempotency: payload mismatch", "key", cur.Key, "state", cur.State)
		return Claim{Status: StatusPayloadMismatch, HeldUntil: cur.HeldUntil, CompletedAt: cur.CompletedAt}
	}
	if cur.State == StateCompleted {
		if r.cache != nil {
			r.cache.put(cur, now)
		}
		return Claim{Status: StatusAlreadyCompleted, Result: cur.Result, CompletedAt: cur.CompletedAt}
	}
	return Claim{Status: StatusInProgress, HeldUntil: cur.HeldUntil}
}

// Complete records result for key, held under token, and keeps it for the
// retention period. A holder whose claim was taken over gets
// [ErrClaimLost] and never overwrites the new holder. Completing twice with
// the same token and result succeeds, so a retry after a lost response is
// safe.
func (r *Registry) Complete(ctx context.Context, key, token string, result []byte) error {
	return r.CompleteFor(ctx, key, token, result, r.cfg.Retention)
}

// CompleteFor is [Registry.Complete] with the completed record kept for
// keep (at least the retention) instead: for keys whose requests carry
// no signed time, so that a replay long after the payload is gone still
// finds the key. The record is small: its key, hashes and result.
func (r *Registry) CompleteFor(ctx context.Context, key, token string, result []byte, keep time.Duration) error {
	if err := checkKey(key); err != nil {
		return fmt.Errorf("idempotency: complete: %w", err)
	}
	if token == "" {
		return fmt.Errorf("idempotency: complete %s: empty token: %w", key, ErrInvalidInput)
	}
	if len(result) > MaxResultSize {
		return fmt.Errorf("idempotency: complete %s: result of %d bytes exceeds %d: %w", key, len(result), MaxResultSize, ErrInvalidInput)
	}
	if len(result) == 0 {
		result = nil
	}
	stored := r.Key(key)
	now := r.now()
	expires := r.expiresAt(now)
	if keep > r.cfg.Retention {
		expires = time.Unix(now.Add(keep).Unix(), 0)
	}
	rec, err := r.store.Complete(ctx, stored, token, result, millis(now), expires)
	switch {
	case err == nil:
	case errors.Is(err, ErrClaimLost):
		// The condition failed. Either another holder took over, or this is
		// a retry of a Complete whose response was lost.
		cur, ok, gerr := r.store.Get(ctx, stored)
		if gerr != nil {
			return &StoreError{Op: "complete", Key: stored, Err: gerr}
		}
		if !ok || cur.State != StateCompleted || cur.Token != token || !bytes.Equal(cur.Result, result) {
			r.log.WarnContext(ctx, "idempotency: claim lost before complete", "key", stored)
			return fmt.Errorf("idempotency: complete %s: %w", stored, ErrClaimLost)
		}
		rec = cur
	default:
		return &StoreError{Op: "complete", Key: stored, Err: err}
	}
	if r.cache != nil {
		r.cache.put(rec, now)
	}
	return nil
}

// Release ends the claim on key held under token without a result. The
// record is never deleted: it stays IN_PROGRESS with its attempt count,
// and the key may be claimed again once retryAt has passed (a claim at or
// before retryAt is [StatusInProgress]). The holder chooses retryAt: now, when
// its work provably had no effect; the time by which an effect of its work
// would be visible, when that is unknown. A holder whose claim was taken
// over or completed, or whose record is gone, gets [ErrClaimLost] and
// changes nothing.
func (r *Registry) Release(ctx context.Context, key, token string, retryAt time.Time) error {
	if err := checkKey(key); err != nil {
		return fmt.Errorf("idempotency: release: %w", err)
	}
	if token == "" {
		return fmt.Errorf("idempotency: release %s: empty token: %w", key, ErrInvalidInput)
	}
	stored := r.Key(key)
	err := r.store.Release(ctx, stored, token, millis(retryAt))
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrClaimLost):
		r.log.WarnContext(ctx, "idempotency: claim lost before release", "key", stored)
		return fmt.Errorf("idempotency: release %s: %w", stored, ErrClaimLost)
	default:
		return &StoreError{Op: "release", Key: stored, Err: err}
	}
}

// Status returns the record for key with a consistent read, for operators.
// It reports found=false for an absent key and for one past its retention,
// exactly as [Registry.Claim] would see it. An IN_PROGRESS record whose
// HeldUntil has passed is returned as stored; [Record.Stale] tells.
func (r *Registry) Status(ctx context.Context, key string) (Record, bool, error) {
	if err := checkKey(key); err != nil {
		return Record{}, false, fmt.Errorf("idempotency: status: %w", err)
	}
	stored := r.Key(key)
	rec, ok, err := r.store.Get(ctx, stored)
	if err != nil {
		return Record{}, false, &StoreError{Op: "status", Key: stored, Err: err}
	}
	if !ok || !rec.Retained(r.now()) {
		return Record{}, false, nil
	}
	return rec, true, nil
}

// heldUntil returns the end of a claim's in-progress window made at now.
func (r *Registry) heldUntil(ctx context.Context, now time.Time) time.Time {
	until := now.Add(r.cfg.InProgressTimeout)
	if dl, ok := ctx.Deadline(); ok {
		if capped := dl.Add(r.cfg.DeadlineMargin); capped.Before(until) {
			until = capped
		}
	}
	return millis(until)
}

// expiresAt returns the end of retention for a record written at now, in
// whole seconds as DynamoDB TTL stores it.
func (r *Registry) expiresAt(now time.Time) time.Time {
	return time.Unix(now.Add(r.cfg.Retention).Unix(), 0)
}

func millis(t time.Time) time.Time { return time.UnixMilli(t.UnixMilli()) }

func checkKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("empty key: %w", ErrInvalidInput)
	case len(key) > MaxKeyLen:
		return fmt.Errorf("key of %d bytes exceeds %d: %w", len(key), MaxKeyLen, ErrInvalidInput)
	case !utf8.ValidString(key):
		return fmt.Errorf("key is not valid UTF-8: %w", ErrInvalidInput)
	}
	return nil
}
