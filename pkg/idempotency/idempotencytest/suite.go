package idempotencytest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/hookline/hookline/pkg/idempotency"
)

// Window is the in-progress window the suite configures.
const Window = 30 * time.Second

// Fixture is what each scenario of the suite works with.
type Fixture struct {
	// Store is the store under test.
	Store idempotency.Store
	// Clock drives every registry the fixture builds.
	Clock *Clock
	// Namespace is unique to the scenario.
	Namespace string
	// Registry uses Store, Clock and Namespace, with the default retention
	// and no cache.
	Registry *idempotency.Registry
}

// NewRegistry returns a registry over the fixture's store and clock, in the
// namespace ns, with edit applied to its config (edit may be nil).
func (f *Fixture) NewRegistry(t *testing.T, ns string, edit func(*idempotency.Config)) *idempotency.Registry {
	t.Helper()
	cfg := idempotency.Config{Store: f.Store, Namespace: ns, InProgressTimeout: Window, Now: f.Clock.Now}
	if edit != nil {
		edit(&cfg)
	}
	r, err := idempotency.New(cfg)
	if err != nil {
		t.Fatalf("new registry: %v", err)
	}
	return r
}

// Scenario is one case of the suite.
type Scenario struct {
	Name string
	Run  func(t *testing.T, f *Fixture)
}

// Run runs every scenario against a store from newStore, called once per
// scenario.
func Run(t *testing.T, newStore func(t *testing.T) idempotency.Store) {
	t.Helper()
	for _, sc := range Scenarios() {
		t.Run(sc.Name, func(t *testing.T) {
			f := &Fixture{
				Store:     newStore(t),
				Clock:     NewClock(time.Now().Truncate(time.Second)),
				Namespace: fmt.Sprintf("t%016x", rand.Uint64()),
			}
			f.Registry = f.NewRegistry(t, f.Namespace, nil)
			sc.Run(t, f)
		})
	}
}

var (
	hashA = idempotency.Hash("cus_1", "1999", "eur")
	hashB = idempotency.Hash("cus_1", "2999", "eur")
)

// Scenarios returns the suite's cases.
func Scenarios() []Scenario {
	return []Scenario{
		{"new key is claimed", newKeyIsClaimed},
		{"second claim is in progress until the holder's window ends", secondClaimInProgress},
		{"claim still holds at exactly its held-until", holdsAtBoundary},
		{"expired claim is taken over and the old holder is fenced", takeoverFencesOldHolder},
		{"completed key replays its exact result", completedReplays},
		{"empty result replays as nil", emptyResult},
		{"complete repeated by the same holder succeeds", completeIsRepeatable},
		{"payload mismatch", payloadMismatch},
		{"release keeps the record and lets the key be claimed after its time", releaseThenReclaim},
		{"release until later holds the key until then; attempts count on", releaseUntilLater},
		{"release of a completed key is refused", releaseCompleted},
		{"32 concurrent claims on one key, exactly one wins", concurrentClaims},
		{"16 concurrent takeovers of a stale claim, exactly one wins", concurrentTakeovers},
		{"record past its retention is absent", retentionExpired},
		{"namespaces are isolated", namespacesIsolated},
		{"cache answers completed keys without the store", cacheAvoidsStore},
		{"in-progress keys are never cached", inProgressNotCached},
		{"status of an unknown key", statusUnknown},
	}
}

func claim(t *testing.T, r *idempotency.Registry, key, hash string) idempotency.Claim {
	t.Helper()
	c, err := r.Claim(t.Context(), key, hash)
	if err != nil {
		t.Fatalf("claim %s: %v", key, err)
	}
	return c
}

func mustClaim(t *testing.T, r *idempotency.Registry, key, hash string) idempotency.Claim {
	t.Helper()
	c := claim(t, r, key, hash)
	if c.Status != idempotency.StatusClaimed || c.Token == "" {
		t.Fatalf("claim %s = %+v, want claimed with a token", key, c)
	}
	return c
}

func wantStatus(t *testing.T, c idempotency.Claim, want idempotency.Status) {
	t.Helper()
	if c.Status != want {
		t.Fatalf("status = %s, want %s (claim %+v)", c.Status, want, c)
	}
}

func complete(t *testing.T, r *idempotency.Registry, key, token string, result []byte) {
	t.Helper()
	if err := r.Complete(t.Context(), key, token, result); err != nil {
		t.Fatalf("complete %s: %v", key, err)
	}
}

func status(t *testing.T, r *idempotency.Registry, key string) (idempotency.Record, bool) {
	t.Helper()
	rec, ok, err := r.Status(t.Context(), key)
	if err != nil {
		t.Fatalf("status %s: %v", key, err)
	}
	return rec, ok
}

func newKeyIsClaimed(t *testing.T, f *Fixture) {
	// Given a key never seen, when it is claimed,
	c := mustClaim(t, f.Registry, "evt_1", hashA)
	// then the claim holds for the window and is no takeover
	if want := f.Clock.Now().Add(Window); !c.HeldUntil.Equal(want) {
		t.Errorf("HeldUntil = %s, want %s", c.HeldUntil, want)
	}
	if c.Takeover || c.Attempt != 1 {
		t.Errorf("a new key's claim reports takeover %v, attempt %d; want false, 1", c.Takeover, c.Attempt)
	}
	// and the stored record shows the holder.
	rec, ok := status(t, f.Registry, "evt_1")
	if !ok {
		t.Fatal("status: not found")
	}
	if rec.Key != f.Registry.Key("evt_1") || rec.State != idempotency.StateInProgress ||
		rec.Token != c.Token || rec.PayloadHash != hashA || !rec.HeldUntil.Equal(c.HeldUntil) {
		t.Errorf("record = %+v, claim = %+v", rec, c)
	}
	if !rec.ExpiresAt.Equal(f.Clock.Now().Add(idempotency.DefaultRetention)) {
		t.Errorf("ExpiresAt = %s, want now + default retention", rec.ExpiresAt)
	}
}

func secondClaimInProgress(t *testing.T, f *Fixture) {
	// Given a held key,
	first := mustClaim(t, f.Registry, "evt_1", hashA)
	f.Clock.Advance(10 * time.Second)
	// when it is claimed again inside the window,
	second := claim(t, f.Registry, "evt_1", hashA)
	// then the second caller learns who holds it until when, with no token.
	wantStatus(t, second, idempotency.StatusInProgress)
	if !second.HeldUntil.Equal(first.HeldUntil) || second.Token != "" {
		t.Errorf("second = %+v, want HeldUntil %s and no token", second, first.HeldUntil)
	}
}

func holdsAtBoundary(t *testing.T, f *Fixture) {
	// Given a held key and a clock exactly at its held-until,
	first := mustClaim(t, f.Registry, "evt_1", hashA)
	f.Clock.Set(first.HeldUntil)
	// when it is claimed again, then it is still held;
	wantStatus(t, claim(t, f.Registry, "evt_1", hashA), idempotency.StatusInProgress)
	// one millisecond later it is not.
	f.Clock.Advance(time.Millisecond)
	mustClaim(t, f.Registry, "evt_1", hashA)
}

func takeoverFencesOldHolder(t *testing.T, f *Fixture) {
	ctx := t.Context()
	// Given a holder that stalls past its window,
	old := mustClaim(t, f.Registry, "evt_1", hashA)
	f.Clock.Advance(Window + time.Millisecond)
	// when another worker claims the key,
	taker := mustClaim(t, f.Registry, "evt_1", hashA)
	// then it gets a new token and a new window, marked as a takeover,
	if taker.Token == old.Token || !taker.HeldUntil.After(old.HeldUntil) || !taker.Takeover || taker.Attempt != 2 {
		t.Fatalf("takeover = %+v, old = %+v", taker, old)
	}
	// the old holder can neither complete nor release,
	if err := f.Registry.Complete(ctx, "evt_1", old.Token, []byte("old")); !idempotency.IsClaimLost(err) {
		t.Fatalf("old complete = %v, want ErrClaimLost", err)
	}
	if err := f.Registry.Release(ctx, "evt_1", old.Token, f.Clock.Now()); !idempotency.IsClaimLost(err) {
		t.Fatalf("old release = %v, want ErrClaimLost", err)
	}
	rec, _ := status(t, f.Registry, "evt_1")
	if rec.State != idempotency.StateInProgress || rec.Token != taker.Token {
		t.Fatalf("record after fenced calls = %+v, want the new holder's claim", rec)
	}
	// and the new holder's result is the one replayed.
	complete(t, f.Registry, "evt_1", taker.Token, []byte("new"))
	if err := f.Registry.Complete(ctx, "evt_1", old.Token, []byte("old")); !idempotency.IsClaimLost(err) {
		t.Fatalf("old complete after new = %v, want ErrClaimLost", err)
	}
	replay := claim(t, f.Registry, "evt_1", hashA)
	wantStatus(t, replay, idempotency.StatusAlreadyCompleted)
	if string(replay.Result) != "new" {
		t.Errorf("replayed %q, want %q", replay.Result, "new")
	}
}

func completedReplays(t *testing.T, f *Fixture) {
	result := []byte{0x00, 0x01, '{', '}', 0xff, '\n'}
	// Given a completed key,
	c := mustClaim(t, f.Registry, "evt_1", hashA)
	f.Clock.Advance(2 * time.Second)
	completedAt := f.Clock.Now()
	complete(t, f.Registry, "evt_1", c.Token, result)
	// when it is claimed again, even long after any in-progress window,
	f.Clock.Advance(10 * Window)
	replay := claim(t, f.Registry, "evt_1", hashA)
	// then the exact stored bytes come back.
	wantStatus(t, replay, idempotency.StatusAlreadyCompleted)
	if !bytes.Equal(replay.Result, result) || replay.Token != "" || !replay.CompletedAt.Equal(completedAt) {
		t.Errorf("replay = %+v, want result %v completed at %s", replay, result, completedAt)
	}
	rec, ok := status(t, f.Registry, "evt_1")
	if !ok || rec.State != idempotency.StateCompleted || !bytes.Equal(rec.Result, result) || !rec.HeldUntil.IsZero() {
		t.Errorf("status = %+v, %v", rec, ok)
	}
	if !rec.ExpiresAt.Equal(completedAt.Add(idempotency.DefaultRetention)) {
		t.Errorf("ExpiresAt = %s, want completion + retention", rec.ExpiresAt)
	}
}

func emptyResult(t *testing.T, f *Fixture) {
	// Given a key completed with an empty result,
	c := mustClaim(t, f.Registry, "evt_1", hashA)
	complete(t, f.Registry, "evt_1", c.Token, []byte{})
	// when it is replayed, then the result is nil.
	replay := claim(t, f.Registry, "evt_1", hashA)
	wantStatus(t, replay, idempotency.StatusAlreadyCompleted)
	if replay.Result != nil {
		t.Errorf("result = %#v, want nil", replay.Result)
	}
}

func completeIsRepeatable(t *testing.T, f *Fixture) {
	// Given a completed key,
	c := mustClaim(t, f.Registry, "evt_1", hashA)
	complete(t, f.Registry, "evt_1", c.Token, []byte("ok"))
	// when the same holder completes again with the same result (a retry
	// after a lost response), then it succeeds;
	complete(t, f.Registry, "evt_1", c.Token, []byte("ok"))
	// with a different result it is refused, and the first result stays.
	if err := f.Registry.Complete(t.Context(), "evt_1", c.Token, []byte("other")); !idempotency.IsClaimLost(err) {
		t.Fatalf("complete with another result = %v, want ErrClaimLost", err)
	}
	if got := claim(t, f.Registry, "evt_1", hashA); string(got.Result) != "ok" {
		t.Errorf("replay = %+v, want result ok", got)
	}
}

func payloadMismatch(t *testing.T, f *Fixture) {
	tests := []struct {
		name  string
		given func(t *testing.T, key string)
	}{
		{"in progress", func(t *testing.T, key string) {
			mustClaim(t, f.Registry, key, hashA)
		}},
		{"completed", func(t *testing.T, key string) {
			c := mustClaim(t, f.Registry, key, hashA)
			complete(t, f.Registry, key, c.Token, []byte("ok"))
		}},
		{"in progress past its window", func(t *testing.T, key string) {
			mustClaim(t, f.Registry, key, hashA)
			f.Clock.Advance(Window + time.Second)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := "evt_" + tt.name
			// Given a key used for payload A,
			tt.given(t, key)
			before, _ := status(t, f.Registry, key)
			// when it is claimed for payload B,
			got := claim(t, f.Registry, key, hashB)
			// then the claim is a mismatch and the record is untouched.
			wantStatus(t, got, idempotency.StatusPayloadMismatch)
			if got.Token != "" || got.Result != nil {
				t.Errorf("mismatch leaks %+v", got)
			}
			after, _ := status(t, f.Registry, key)
			if after.Token != before.Token || after.State != before.State || after.PayloadHash != hashA {
				t.Errorf("record changed: %+v -> %+v", before, after)
			}
		})
	}
}

func releaseThenReclaim(t *testing.T, f *Fixture) {
	ctx := t.Context()
	// Given a holder that releases after a failure that had no effect,
	first := mustClaim(t, f.Registry, "evt_1", hashA)
	if err := f.Registry.Release(ctx, "evt_1", first.Token, f.Clock.Now()); err != nil {
		t.Fatalf("release: %v", err)
	}
	// then the record stays, with its attempt, and is claimable a
	// millisecond later with a new token and the next attempt;
	rec, ok := status(t, f.Registry, "evt_1")
	if !ok || rec.State != idempotency.StateInProgress || rec.Attempt != 1 || !rec.HeldUntil.Equal(f.Clock.Now()) {
		t.Fatalf("released record = %+v (found %v), want IN_PROGRESS attempt 1 held until now", rec, ok)
	}
	wantStatus(t, claim(t, f.Registry, "evt_1", hashA), idempotency.StatusInProgress)
	f.Clock.Advance(time.Millisecond)
	second := mustClaim(t, f.Registry, "evt_1", hashA)
	if second.Token == first.Token || second.Attempt != 2 || !second.Takeover {
		t.Fatalf("re-claim = %+v, want a new token, attempt 2, takeover", second)
	}
	// releasing again with the old token cannot touch the new claim,
	if err := f.Registry.Release(ctx, "evt_1", first.Token, f.Clock.Now()); !idempotency.IsClaimLost(err) {
		t.Fatalf("stale release = %v, want ErrClaimLost", err)
	}
	if rec, _ := status(t, f.Registry, "evt_1"); rec.Token != second.Token {
		t.Fatalf("record = %+v, want the second claim", rec)
	}
	// and releasing a key nobody holds changes nothing.
	if err := f.Registry.Release(ctx, "evt_never", "some-token", f.Clock.Now()); !idempotency.IsClaimLost(err) {
		t.Fatalf("release of absent key = %v, want ErrClaimLost", err)
	}
	if _, ok := status(t, f.Registry, "evt_never"); ok {
		t.Fatal("a release created a record")
	}
}

func releaseUntilLater(t *testing.T, f *Fixture) {
	// Given a holder whose work may still take effect for 20 s,
	first := mustClaim(t, f.Registry, "evt_1", hashA)
	later := f.Clock.Now().Add(20 * time.Second)
	if err := f.Registry.Release(t.Context(), "evt_1", first.Token, later); err != nil {
		t.Fatalf("release: %v", err)
	}
	// when the key is claimed before then, it is in progress until then;
	f.Clock.Advance(10 * time.Second)
	c := claim(t, f.Registry, "evt_1", hashA)
	wantStatus(t, c, idempotency.StatusInProgress)
	if !c.HeldUntil.Equal(later) {
		t.Fatalf("held until %s, want %s", c.HeldUntil, later)
	}
	// after it, the next claim is attempt 2, and every claim counts on.
	f.Clock.Set(later.Add(time.Millisecond))
	second := mustClaim(t, f.Registry, "evt_1", hashA)
	f.Clock.Advance(Window + time.Millisecond)
	third := mustClaim(t, f.Registry, "evt_1", hashA)
	if second.Attempt != 2 || third.Attempt != 3 {
		t.Fatalf("attempts %d, %d; want 2, 3", second.Attempt, third.Attempt)
	}
	complete(t, f.Registry, "evt_1", third.Token, []byte("ok"))
	if rec, _ := status(t, f.Registry, "evt_1"); rec.Attempt != 3 || rec.State != idempotency.StateCompleted {
		t.Fatalf("completed record = %+v, want attempt 3", rec)
	}
}

func releaseCompleted(t *testing.T, f *Fixture) {
	// Given a completed key,
	c := mustClaim(t, f.Registry, "evt_1", hashA)
	complete(t, f.Registry, "evt_1", c.Token, []byte("ok"))
	// when its holder releases it, then the release is refused
	if err := f.Registry.Release(t.Context(), "evt_1", c.Token, f.Clock.Now()); !idempotency.IsClaimLost(err) {
		t.Fatalf("release = %v, want ErrClaimLost", err)
	}
	// and the result is still replayed.
	wantStatus(t, claim(t, f.Registry, "evt_1", hashA), idempotency.StatusAlreadyCompleted)
}

// claimAtOnce has n workers claim key at the same moment and returns the
// one that won, failing unless exactly one did.
func claimAtOnce(t *testing.T, r *idempotency.Registry, n int, key string) (idempotency.Claim, []idempotency.Claim) {
	t.Helper()
	results := make([]idempotency.Claim, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			results[i], errs[i] = r.Claim(t.Context(), key, hashA)
		})
	}
	close(start)
	wg.Wait()
	var winner idempotency.Claim
	wins := 0
	for i, c := range results {
		if errs[i] != nil {
			t.Fatalf("claim %d: %v", i, errs[i])
		}
		if c.Status == idempotency.StatusClaimed {
			wins++
			winner = c
		}
	}
	if wins != 1 {
		t.Fatalf("%d claims won, want exactly 1", wins)
	}
	return winner, results
}

func concurrentClaims(t *testing.T, f *Fixture) {
	// Given 32 workers receiving the same event at once, when they all
	// claim it, then exactly one holds it and the rest see its window.
	winner, results := claimAtOnce(t, f.Registry, 32, "evt_1")
	for i, c := range results {
		if c.Status != idempotency.StatusClaimed && (c.Status != idempotency.StatusInProgress || !c.HeldUntil.Equal(winner.HeldUntil)) {
			t.Errorf("claim %d = %+v, want in progress until %s", i, c, winner.HeldUntil)
		}
	}
	rec, _ := status(t, f.Registry, "evt_1")
	if rec.Token != winner.Token {
		t.Errorf("stored token is not the winner's")
	}
}

func concurrentTakeovers(t *testing.T, f *Fixture) {
	// Given a stale claim of attempt 1,
	mustClaim(t, f.Registry, "evt_1", hashA)
	f.Clock.Advance(Window + time.Millisecond)
	// when 16 workers take it over at once, then exactly one wins, as
	// attempt 2, and the record says so.
	winner, _ := claimAtOnce(t, f.Registry, 16, "evt_1")
	if winner.Attempt != 2 {
		t.Fatalf("the takeover is attempt %d, want 2", winner.Attempt)
	}
	if rec, _ := status(t, f.Registry, "evt_1"); rec.Token != winner.Token || rec.Attempt != 2 {
		t.Fatalf("record = %+v, want the winner's attempt 2", rec)
	}
}

func retentionExpired(t *testing.T, f *Fixture) {
	tests := []struct {
		name  string
		given func(t *testing.T, key string)
	}{
		{"completed", func(t *testing.T, key string) {
			c := mustClaim(t, f.Registry, key, hashA)
			complete(t, f.Registry, key, c.Token, []byte("ok"))
		}},
		{"in progress", func(t *testing.T, key string) {
			mustClaim(t, f.Registry, key, hashA)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := "evt_" + tt.name
			f.Clock.Set(f.Clock.Now().Truncate(time.Second))
			// Given a record written now,
			tt.given(t, key)
			// when its retention ends, it still counts for that second;
			f.Clock.Advance(idempotency.DefaultRetention)
			if _, ok := status(t, f.Registry, key); !ok {
				t.Fatal("record absent at its last retained second")
			}
			// one second later it is absent, though no TTL deleted it,
			f.Clock.Advance(time.Second)
			if rec, ok := status(t, f.Registry, key); ok {
				t.Fatalf("expired record visible: %+v", rec)
			}
			if _, ok, err := f.Store.Get(t.Context(), f.Registry.Key(key)); err != nil || !ok {
				t.Fatalf("store get = %v, %v; the record should still be stored", ok, err)
			}
			// and a claim, even for another payload, starts a new life.
			c := mustClaim(t, f.Registry, key, hashB)
			rec, _ := status(t, f.Registry, key)
			if rec.Token != c.Token || rec.PayloadHash != hashB || rec.State != idempotency.StateInProgress {
				t.Errorf("record = %+v, want the new claim", rec)
			}
		})
	}
}

func namespacesIsolated(t *testing.T, f *Fixture) {
	a := f.NewRegistry(t, f.Namespace+"-a", nil)
	b := f.NewRegistry(t, f.Namespace+"-b", nil)
	// Given a key completed in namespace a,
	c := mustClaim(t, a, "evt_1", hashA)
	complete(t, a, "evt_1", c.Token, []byte("a"))
	// then namespace b has never seen it
	if _, ok := status(t, b, "evt_1"); ok {
		t.Fatal("namespace b sees namespace a's key")
	}
	// and claims it for itself, even for another payload.
	mustClaim(t, b, "evt_1", hashB)
	if a.Key("evt_1") == b.Key("evt_1") {
		t.Errorf("stored keys collide: %s", a.Key("evt_1"))
	}
	wantStatus(t, claim(t, a, "evt_1", hashA), idempotency.StatusAlreadyCompleted)
}

func cacheAvoidsStore(t *testing.T, f *Fixture) {
	counting := NewCounting(f.Store)
	withCache := func(c *idempotency.Config) {
		c.Store = counting
		c.CacheSize = 8
		c.CacheTTL = time.Minute
	}
	worker := f.NewRegistry(t, f.Namespace, withCache)
	// Given a key this process completed,
	c := mustClaim(t, worker, "evt_1", hashA)
	complete(t, worker, "evt_1", c.Token, []byte("charged"))
	before := counting.Calls()
	// when it is redelivered three times and once with another payload,
	for range 3 {
		got := claim(t, worker, "evt_1", hashA)
		wantStatus(t, got, idempotency.StatusAlreadyCompleted)
		if string(got.Result) != "charged" {
			t.Fatalf("cached result = %q", got.Result)
		}
	}
	wantStatus(t, claim(t, worker, "evt_1", hashB), idempotency.StatusPayloadMismatch)
	// then the store was not called,
	if after := counting.Calls(); after != before {
		t.Fatalf("store calls %+v -> %+v, want none", before, after)
	}
	// until the cache entry expires.
	f.Clock.Advance(time.Minute)
	wantStatus(t, claim(t, worker, "evt_1", hashA), idempotency.StatusAlreadyCompleted)
	if got := counting.Calls().Claim - before.Claim; got != 1 {
		t.Fatalf("store claims after cache expiry = %d, want 1", got)
	}

	// Given another process that learns of the completion from the store,
	other := f.NewRegistry(t, f.Namespace, withCache)
	wantStatus(t, claim(t, other, "evt_1", hashA), idempotency.StatusAlreadyCompleted)
	before = counting.Calls()
	// then its next replay is answered from its cache.
	wantStatus(t, claim(t, other, "evt_1", hashA), idempotency.StatusAlreadyCompleted)
	if after := counting.Calls(); after != before {
		t.Fatalf("store calls %+v -> %+v, want none", before, after)
	}
}

func inProgressNotCached(t *testing.T, f *Fixture) {
	counting := NewCounting(f.Store)
	r := f.NewRegistry(t, f.Namespace, func(c *idempotency.Config) {
		c.Store = counting
		c.CacheSize = 8
	})
	// Given a key held by someone,
	mustClaim(t, r, "evt_1", hashA)
	// when it is claimed twice more, then both claims reach the store.
	for range 2 {
		wantStatus(t, claim(t, r, "evt_1", hashA), idempotency.StatusInProgress)
	}
	if got := counting.Calls().Claim; got != 3 {
		t.Fatalf("store claims = %d, want 3", got)
	}
}

func statusUnknown(t *testing.T, f *Fixture) {
	// Given a key never claimed, then its status is none, without error.
	if rec, ok := status(t, f.Registry, "evt_none"); ok {
		t.Fatalf("status = %+v, want none", rec)
	}
}
