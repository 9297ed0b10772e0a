package secrets_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/hookline/hookline/pkg/secrets"
)

// fakeSecretsManager is a loopback double of GetSecretValue (no local
// emulator here runs Secrets Manager). It speaks the service's JSON 1.1
// protocol, so the real SDK client is exercised end to end.
type fakeSecretsManager struct {
	versions map[string]string    // stage -> value
	byID     map[string]string    // secret ID -> AWSCURRENT value, when set
	created  map[string]time.Time // stage -> creation date, if any
	calls    atomic.Int32
	down     atomic.Bool
}

func (f *fakeSecretsManager) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.calls.Add(1)
	if r.Header.Get("X-Amz-Target") != "secretsmanager.GetSecretValue" {
		http.Error(w, "unexpected target", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	if f.down.Load() {
		w.WriteHeader(http.StatusInternalServerError)
		w.Write([]byte(`{"__type":"InternalServiceError","message":"down"}`))
		return
	}
	var in struct{ SecretId, VersionStage string }
	json.NewDecoder(r.Body).Decode(&in)
	v, ok := f.versions[in.VersionStage]
	if f.byID != nil {
		v, ok = f.byID[in.SecretId]
		ok = ok && in.VersionStage == "AWSCURRENT"
	}
	if !ok {
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"__type":"ResourceNotFoundException","message":"no such version"}`))
		return
	}
	out := map[string]any{"ARN": "arn:aws:secretsmanager:us-east-1:0:secret:" + in.SecretId, "Name": in.SecretId, "SecretString": v, "VersionStages": []string{in.VersionStage}}
	if c, ok := f.created[in.VersionStage]; ok {
		out["CreatedDate"] = c.Unix() // the JSON protocol's epoch seconds
	}
	json.NewEncoder(w).Encode(out)
}

func client(url string) *secretsmanager.Client {
	return secretsmanager.New(secretsmanager.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(url),
		Credentials:      credentials.NewStaticCredentialsProvider("k", "s", ""),
		RetryMaxAttempts: 1,
	})
}

func TestSecretsManagerAcceptsCurrentAndPrevious(t *testing.T) {
	fake := &fakeSecretsManager{versions: map[string]string{"AWSCURRENT": "whsec_new", "AWSPREVIOUS": "whsec_old"}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	now := time.Unix(1_800_000_000, 0)
	sm := &secrets.SecretsManager{Client: client(srv.URL), TTL: time.Minute, Now: func() time.Time { return now }}

	got, err := sm.Secrets(context.Background(), "hookline/payments")
	if err != nil || len(got) != 2 || got[0] != "whsec_new" || got[1] != "whsec_old" {
		t.Fatalf("Secrets = %v, %v; want current then previous", got, err)
	}
	// Cached within the TTL: no new calls.
	calls := fake.calls.Load()
	if _, err := sm.Secrets(context.Background(), "hookline/payments"); err != nil || fake.calls.Load() != calls {
		t.Fatalf("cache missed: calls %d -> %d", calls, fake.calls.Load())
	}
	// After the TTL a rotation is picked up.
	fake.versions = map[string]string{"AWSCURRENT": "whsec_newer", "AWSPREVIOUS": "whsec_new"}
	now = now.Add(2 * time.Minute)
	got, _ = sm.Secrets(context.Background(), "hookline/payments")
	if got[0] != "whsec_newer" {
		t.Fatalf("after TTL got %v", got)
	}
	// The store going down keeps serving the last good value.
	fake.down.Store(true)
	now = now.Add(2 * time.Minute)
	if got, err := sm.Secrets(context.Background(), "hookline/payments"); err != nil || got[0] != "whsec_newer" {
		t.Fatalf("stale fallback = %v, %v", got, err)
	}
}

func TestSecretsManagerWithoutPreviousVersion(t *testing.T) {
	fake := &fakeSecretsManager{versions: map[string]string{"AWSCURRENT": "whsec_only"}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	sm := &secrets.SecretsManager{Client: client(srv.URL)}
	got, err := sm.Secrets(context.Background(), "s")
	if err != nil || len(got) != 1 || got[0] != "whsec_only" {
		t.Fatalf("Secrets = %v, %v", got, err)
	}
}

func TestSecretsManagerDownWithNoCacheIsUnavailable(t *testing.T) {
	fake := &fakeSecretsManager{}
	fake.down.Store(true)
	srv := httptest.NewServer(fake)
	defer srv.Close()
	sm := &secrets.SecretsManager{Client: client(srv.URL)}
	if _, err := sm.Secrets(context.Background(), "s"); !errors.Is(err, secrets.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
}

func TestEnvSecrets(t *testing.T) {
	env := secrets.Env{Lookup: func(k string) (string, bool) {
		v := map[string]string{"A": "one, two,,", "EMPTY": " "}[k]
		return v, v != ""
	}}
	got, err := env.Secrets(context.Background(), "A")
	if err != nil || len(got) != 2 || got[1] != "two" {
		t.Fatalf("A = %v, %v", got, err)
	}
	for _, ref := range []string{"EMPTY", "MISSING"} {
		if _, err := env.Secrets(context.Background(), ref); !errors.Is(err, secrets.ErrNoSecrets) {
			t.Fatalf("%s: err = %v", ref, err)
		}
	}
}

// TestPreviousVersionOnlyDuringGrace: AWSPREVIOUS is accepted only for the
// grace period after AWSCURRENT was created, so one rotation evicts a leaked
// secret once the grace has passed, cache or no cache.
func TestPreviousVersionOnlyDuringGrace(t *testing.T) {
	rotated := time.Unix(1_800_000_000, 0)
	for _, tc := range []struct {
		name  string
		grace time.Duration // zero: the default, 24 h
		at    time.Duration // after the rotation
		want  []string
	}{
		{name: "just rotated", at: time.Minute, want: []string{"whsec_new", "whsec_old"}},
		{name: "within the default grace", at: 23 * time.Hour, want: []string{"whsec_new", "whsec_old"}},
		{name: "past the default grace", at: 24*time.Hour + time.Second, want: []string{"whsec_new"}},
		{name: "a week later", at: 7 * 24 * time.Hour, want: []string{"whsec_new"}},
		{name: "past a short grace", grace: time.Hour, at: 2 * time.Hour, want: []string{"whsec_new"}},
		{name: "within a long grace", grace: 72 * time.Hour, at: 48 * time.Hour, want: []string{"whsec_new", "whsec_old"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// given a secret rotated at rotated
			fake := &fakeSecretsManager{
				versions: map[string]string{"AWSCURRENT": "whsec_new", "AWSPREVIOUS": "whsec_old"},
				created:  map[string]time.Time{"AWSCURRENT": rotated, "AWSPREVIOUS": rotated.Add(-30 * 24 * time.Hour)},
			}
			srv := httptest.NewServer(fake)
			defer srv.Close()
			now := rotated.Add(tc.at)
			sm := &secrets.SecretsManager{Client: client(srv.URL), PreviousGrace: tc.grace, Now: func() time.Time { return now }}
			// when the secrets are read
			got, err := sm.Secrets(context.Background(), "s")
			// then the previous version is there only within the grace
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("Secrets = %v, %v; want %v", got, err, tc.want)
			}
		})
	}

	t.Run("a cached previous version expires with the grace", func(t *testing.T) {
		// given both versions cached a minute before the grace ends
		fake := &fakeSecretsManager{
			versions: map[string]string{"AWSCURRENT": "whsec_new", "AWSPREVIOUS": "whsec_old"},
			created:  map[string]time.Time{"AWSCURRENT": rotated},
		}
		srv := httptest.NewServer(fake)
		defer srv.Close()
		now := rotated.Add(24*time.Hour - time.Minute)
		sm := &secrets.SecretsManager{Client: client(srv.URL), TTL: time.Hour, Now: func() time.Time { return now }}
		if got, _ := sm.Secrets(context.Background(), "s"); len(got) != 2 {
			t.Fatalf("before the end of the grace: %v", got)
		}
		// when the grace ends within the cache TTL, with the store down
		fake.down.Store(true)
		now = now.Add(2 * time.Minute)
		// then the previous version is gone all the same
		if got, err := sm.Secrets(context.Background(), "s"); err != nil || !slices.Equal(got, []string{"whsec_new"}) {
			t.Fatalf("after the grace: %v, %v; want [whsec_new]", got, err)
		}
	})
}

func TestCurrentNeverReturnsPrevious(t *testing.T) {
	fake := &fakeSecretsManager{versions: map[string]string{"AWSCURRENT": "key_new", "AWSPREVIOUS": "key_old"}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	sm := &secrets.SecretsManager{Client: client(srv.URL)}
	got, err := sm.Current(context.Background(), "provider-api-key")
	if err != nil || got != "key_new" {
		t.Fatalf("Current = %q, %v; want key_new", got, err)
	}
}
