package idempotency_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/pkg/idempotency"
	"github.com/hookline/hookline/pkg/idempotency/idempotencytest"
)

func TestConfigValidate(t *testing.T) {
	store := idempotency.NewMemory()
	tests := []struct {
		name    string
		cfg     idempotency.Config
		wantErr []string // substrings; none means valid
	}{
		{name: "defaults", cfg: idempotency.Config{Store: store, Namespace: "payments"}},
		{name: "every field", cfg: idempotency.Config{
			Store: store, Namespace: "spend.v2_x-1", InProgressTimeout: time.Minute, DeadlineMargin: time.Second,
			Retention: time.Hour, CacheSize: 10, CacheTTL: time.Second,
		}},
		{name: "no store", cfg: idempotency.Config{Namespace: "payments"}, wantErr: []string{"Store"}},
		{name: "no namespace", cfg: idempotency.Config{Store: store}, wantErr: []string{"Namespace"}},
		{name: "namespace with separator", cfg: idempotency.Config{Store: store, Namespace: "pay#ments"}, wantErr: []string{"Namespace"}},
		{name: "namespace too long", cfg: idempotency.Config{Store: store, Namespace: strings.Repeat("n", 65)}, wantErr: []string{"Namespace"}},
		{name: "retention within the window", cfg: idempotency.Config{
			Store: store, Namespace: "p", InProgressTimeout: time.Hour, Retention: time.Minute,
		}, wantErr: []string{"Retention"}},
		{name: "negatives reported together", cfg: idempotency.Config{
			Store: store, Namespace: "p", InProgressTimeout: -1, DeadlineMargin: -1, CacheSize: -1, CacheTTL: -1,
		}, wantErr: []string{"InProgressTimeout", "DeadlineMargin", "CacheSize", "CacheTTL"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Given a config, when it is validated and used,
			err := tt.cfg.Validate()
			_, newErr := idempotency.New(tt.cfg)
			// then New agrees with Validate, and every problem is named.
			if (err == nil) != (newErr == nil) {
				t.Fatalf("Validate = %v but New = %v", err, newErr)
			}
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, idempotency.ErrInvalidConfig) {
				t.Fatalf("Validate = %v, want ErrInvalidConfig", err)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %s", err, want)
				}
			}
		})
	}
}

func TestHeldUntilIsCappedByDeadline(t *testing.T) {
	now := time.Now().Truncate(time.Millisecond)
	tests := []struct {
		name     string
		deadline time.Duration // from now; 0 means no deadline
		want     time.Duration // held-until, from now
	}{
		{name: "no deadline: the window", want: time.Minute},
		{name: "deadline after the window: the window", deadline: 15 * time.Minute, want: time.Minute},
		{name: "Lambda with 20 s left: deadline plus margin", deadline: 20 * time.Second, want: 25 * time.Second},
		{name: "deadline just inside the window", deadline: 55*time.Second + 500*time.Millisecond, want: time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := idempotency.New(idempotency.Config{
				Store: idempotency.NewMemory(), Namespace: "payments", InProgressTimeout: time.Minute,
				DeadlineMargin: 5 * time.Second, Now: func() time.Time { return now },
			})
			if err != nil {
				t.Fatal(err)
			}
			ctx := t.Context()
			if tt.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithDeadline(ctx, now.Add(tt.deadline))
				defer cancel()
			}
			// Given an invocation with the deadline, when it claims a key,
			c, err := r.Claim(ctx, "evt_1", idempotency.Hash("x"))
			if err != nil {
				t.Fatal(err)
			}
			// then its claim is held until the expected time.
			if want := now.Add(tt.want); !c.HeldUntil.Equal(want) {
				t.Errorf("HeldUntil = now+%s, want now+%s", c.HeldUntil.Sub(now), tt.want)
			}
		})
	}
}

func TestInvalidInput(t *testing.T) {
	r, err := idempotency.New(idempotency.Config{Store: idempotency.NewMemory(), Namespace: "payments"})
	if err != nil {
		t.Fatal(err)
	}
	hash := idempotency.Hash("x")
	tests := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"empty key", func(ctx context.Context) error { _, err := r.Claim(ctx, "", hash); return err }},
		{"key too long", func(ctx context.Context) error {
			_, err := r.Claim(ctx, strings.Repeat("k", idempotency.MaxKeyLen+1), hash)
			return err
		}},
		{"key not UTF-8", func(ctx context.Context) error { _, err := r.Claim(ctx, "evt_\xff", hash); return err }},
		{"raw payload instead of a hash", func(ctx context.Context) error {
			_, err := r.Claim(ctx, "evt_1", `{"amount":1999}`)
			return err
		}},
		{"upper-case hash", func(ctx context.Context) error { _, err := r.Claim(ctx, "evt_1", strings.ToUpper(hash)); return err }},
		{"complete without token", func(ctx context.Context) error { return r.Complete(ctx, "evt_1", "", nil) }},
		{"result too large", func(ctx context.Context) error {
			return r.Complete(ctx, "evt_1", "tok", make([]byte, idempotency.MaxResultSize+1))
		}},
		{"release without token", func(ctx context.Context) error { return r.Release(ctx, "evt_1", "", time.Now()) }},
		{"status of empty key", func(ctx context.Context) error { _, _, err := r.Status(ctx, ""); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Given bad input, then the call fails as invalid, not unavailable.
			err := tt.call(t.Context())
			if !idempotency.IsInvalidInput(err) || idempotency.IsUnavailable(err) {
				t.Fatalf("err = %v, want only ErrInvalidInput", err)
			}
		})
	}
}

// failingStore fails every call with err.
type failingStore struct{ err error }

func (f failingStore) Claim(context.Context, idempotency.Record, time.Time) (idempotency.Record, bool, error) {
	return idempotency.Record{}, false, f.err
}

func (f failingStore) Complete(context.Context, string, string, []byte, time.Time, time.Time) (idempotency.Record, error) {
	return idempotency.Record{}, f.err
}
func (f failingStore) Release(context.Context, string, string, time.Time) error { return f.err }
func (f failingStore) Get(context.Context, string) (idempotency.Record, bool, error) {
	return idempotency.Record{}, false, f.err
}

func TestStoreFailuresAreUnavailable(t *testing.T) {
	boom := errors.New("connection reset")
	r, err := idempotency.New(idempotency.Config{Store: failingStore{boom}, Namespace: "payments"})
	if err != nil {
		t.Fatal(err)
	}
	hash := idempotency.Hash("x")
	tests := []struct {
		name   string
		wantOp string
		call   func(ctx context.Context) error
	}{
		{"claim", "claim", func(ctx context.Context) error { _, err := r.Claim(ctx, "evt_1", hash); return err }},
		{"complete", "complete", func(ctx context.Context) error { return r.Complete(ctx, "evt_1", "tok", nil) }},
		{"release", "release", func(ctx context.Context) error { return r.Release(ctx, "evt_1", "tok", time.Now()) }},
		{"status", "status", func(ctx context.Context) error { _, _, err := r.Status(ctx, "evt_1"); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Given a store that is down, when the registry calls it,
			err := tt.call(t.Context())
			// then the error is typed, names the operation and keeps the cause.
			var se *idempotency.StoreError
			if !errors.As(err, &se) || se.Op != tt.wantOp || se.Key != "payments#evt_1" {
				t.Fatalf("err = %#v, want StoreError{Op: %s}", err, tt.wantOp)
			}
			if !idempotency.IsUnavailable(err) || !errors.Is(err, boom) || idempotency.IsClaimLost(err) {
				t.Errorf("err = %v: unavailable %v, wraps cause %v", err, idempotency.IsUnavailable(err), errors.Is(err, boom))
			}
		})
	}
}

func TestCancelledContextIsUnavailable(t *testing.T) {
	r, err := idempotency.New(idempotency.Config{Store: idempotency.NewMemory(), Namespace: "payments"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	// Given a cancelled context, when a key is claimed,
	_, err = r.Claim(ctx, "evt_1", idempotency.Hash("x"))
	// then the claim is unavailable and says why.
	if !idempotency.IsUnavailable(err) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want ErrUnavailable wrapping context.Canceled", err)
	}
}

func TestHash(t *testing.T) {
	tests := []struct {
		name  string
		a, b  []string
		equal bool
	}{
		{name: "same fields", a: []string{"cus_1", "1999", "eur"}, b: []string{"cus_1", "1999", "eur"}, equal: true},
		{name: "different amount", a: []string{"cus_1", "1999", "eur"}, b: []string{"cus_1", "2999", "eur"}},
		{name: "field boundaries count", a: []string{"ab", "c"}, b: []string{"a", "bc"}},
		{name: "empty field counts", a: []string{"a", ""}, b: []string{"a"}},
		{name: "order counts", a: []string{"a", "b"}, b: []string{"b", "a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ha, hb := idempotency.Hash(tt.a...), idempotency.Hash(tt.b...)
			if len(ha) != 64 || strings.ToLower(ha) != ha {
				t.Fatalf("hash %q is not lower-case hex SHA-256", ha)
			}
			if (ha == hb) != tt.equal {
				t.Errorf("Hash(%q) == Hash(%q) is %v, want %v", tt.a, tt.b, ha == hb, tt.equal)
			}
		})
	}
}

func TestStatusString(t *testing.T) {
	tests := []struct {
		name string
		s    idempotency.Status
		want string
	}{
		{"claimed", idempotency.StatusClaimed, "claimed"},
		{"already completed", idempotency.StatusAlreadyCompleted, "already_completed"},
		{"in progress", idempotency.StatusInProgress, "in_progress"},
		{"payload mismatch", idempotency.StatusPayloadMismatch, "payload_mismatch"},
		{"zero", 0, "status(0)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.s.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCompleteRetryReadsBackOnlyOnConflict(t *testing.T) {
	counting := idempotencytest.NewCounting(idempotency.NewMemory())
	r, err := idempotency.New(idempotency.Config{Store: counting, Namespace: "payments"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	c, err := r.Claim(ctx, "evt_1", idempotency.Hash("x"))
	if err != nil {
		t.Fatal(err)
	}
	// Given a first Complete, then it costs one write and no read;
	if err := r.Complete(ctx, "evt_1", c.Token, []byte("r")); err != nil {
		t.Fatal(err)
	}
	if got := counting.Calls(); got.Complete != 1 || got.Get != 0 {
		t.Fatalf("calls = %+v, want one complete, no get", got)
	}
	// a repeat costs the failed write and one read to recognise it.
	if err := r.Complete(ctx, "evt_1", c.Token, []byte("r")); err != nil {
		t.Fatal(err)
	}
	if got := counting.Calls(); got.Complete != 2 || got.Get != 1 {
		t.Fatalf("calls = %+v, want two completes, one get", got)
	}
}

// ownWriteStore answers every claim as if the put had already been applied
// by an earlier attempt whose response was lost: the condition fails on the
// caller's own record.
type ownWriteStore struct{ *idempotency.Memory }

func (s ownWriteStore) Claim(_ context.Context, rec idempotency.Record, _ time.Time) (idempotency.Record, bool, error) {
	return rec, false, nil
}

func TestClaimRecognisesItsOwnRetriedWrite(t *testing.T) {
	r, err := idempotency.New(idempotency.Config{Store: ownWriteStore{idempotency.NewMemory()}, Namespace: "payments"})
	if err != nil {
		t.Fatal(err)
	}
	// Given a claim whose write was applied but reported as a conflict,
	c, err := r.Claim(t.Context(), "evt_1", idempotency.Hash("x"))
	// then the caller still holds it.
	if err != nil || c.Status != idempotency.StatusClaimed || c.Token == "" {
		t.Fatalf("claim = %+v, %v; want claimed with a token", c, err)
	}
}
