package secrets

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	smtypes "github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"

	"github.com/hookline/hookline/pkg/webhook"
)

// Errors returned by providers.
var (
	// ErrNoSecrets means a source has no active secret configured.
	ErrNoSecrets = errors.New("secrets: no active secret")
	// ErrUnavailable means the secret store could not be read.
	ErrUnavailable = errors.New("secrets: store unavailable")
)

// Provider returns the active secrets of a source, newest first.
type Provider interface {
	Secrets(ctx context.Context, ref string) ([]string, error)
}

// Env reads secrets from environment variables: ref is the variable name
// and its value is a comma-separated list of active secrets.
type Env struct {
	// Lookup defaults to os.LookupEnv.
	Lookup func(string) (string, bool)
}

var _ Provider = Env{}

// Secrets implements [Provider].
func (e Env) Secrets(_ context.Context, ref string) ([]string, error) {
	lookup := e.Lookup
	if lookup == nil {
		lookup = os.LookupEnv
	}
	v, _ := lookup(ref)
	out := webhook.SplitSecrets(v)
	if len(out) == 0 {
		return nil, fmt.Errorf("variable %s: %w", ref, ErrNoSecrets)
	}
	return out, nil
}

// SecretsManagerAPI is the part of the Secrets Manager client used here.
type SecretsManagerAPI interface {
	GetSecretValue(context.Context, *secretsmanager.GetSecretValueInput, ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// DefaultPreviousGrace is how long AWSPREVIOUS stays valid after the
// AWSCURRENT version was created, unless [SecretsManager.PreviousGrace] says
// otherwise.
const DefaultPreviousGrace = 24 * time.Hour

// SecretsManager reads a source's secret by ARN or name, with a per-process
// cache. It accepts the AWSCURRENT version, and the AWSPREVIOUS version only
// for a grace period after the current version was created: a rotation keeps
// in-flight deliveries signed with the old secret valid, and one rotation is
// enough to evict a leaked secret once the grace has passed.
type SecretsManager struct {
	Client SecretsManagerAPI
	// TTL bounds how stale a cached value may be (default 5 minutes), so a
	// rotation is picked up without a redeploy.
	TTL time.Duration
	// PreviousGrace is how long after the current version's creation the
	// previous version is still accepted (default [DefaultPreviousGrace]).
	// A current version without a creation date (AWS always sends one)
	// keeps the previous version.
	PreviousGrace time.Duration
	Now           func() time.Time

	mu    sync.Mutex
	cache map[string]cached
}

type cached struct {
	current  []string
	previous []string
	// previousUntil is when previous stops being valid; zero means never
	// (no creation date was known).
	previousUntil time.Time
	until         time.Time
}

// values returns the secrets valid at now, current first.
func (c cached) values(now time.Time) []string {
	if len(c.previous) == 0 || (!c.previousUntil.IsZero() && !now.Before(c.previousUntil)) {
		return c.current
	}
	out := append([]string(nil), c.current...)
	for _, v := range c.previous {
		if !contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

var _ Provider = (*SecretsManager)(nil)

// Secrets implements [Provider].
func (m *SecretsManager) Secrets(ctx context.Context, ref string) ([]string, error) {
	now := m.now()
	m.mu.Lock()
	c, ok := m.cache[ref]
	m.mu.Unlock()
	if ok && now.Before(c.until) {
		return c.values(now), nil
	}
	fresh, err := m.fetch(ctx, ref, now)
	if err != nil {
		if ok {
			// A stale value beats refusing every webhook while the store
			// is briefly unreachable; the previous version's grace still
			// ends on time.
			return c.values(now), nil
		}
		return nil, err
	}
	m.mu.Lock()
	if m.cache == nil {
		m.cache = map[string]cached{}
	}
	m.cache[ref] = fresh
	m.mu.Unlock()
	return fresh.values(now), nil
}

// Current returns the AWSCURRENT value of a secret that holds one value,
// such as an API key, cached like [SecretsManager.Secrets]. It never
// returns a previous version.
func (m *SecretsManager) Current(ctx context.Context, ref string) (string, error) {
	now := m.now()
	m.mu.Lock()
	c, ok := m.cache[ref]
	m.mu.Unlock()
	if ok && now.Before(c.until) {
		return c.current[0], nil
	}
	fresh, err := m.fetch(ctx, ref, now)
	if err != nil {
		if ok {
			return c.current[0], nil
		}
		return "", err
	}
	m.mu.Lock()
	if m.cache == nil {
		m.cache = map[string]cached{}
	}
	m.cache[ref] = fresh
	m.mu.Unlock()
	return fresh.current[0], nil
}

func (m *SecretsManager) fetch(ctx context.Context, ref string, now time.Time) (cached, error) {
	cur, err := m.Client.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(ref), VersionStage: aws.String("AWSCURRENT")})
	if err != nil {
		return cached{}, fmt.Errorf("secret %s (AWSCURRENT): %w: %w", ref, ErrUnavailable, err)
	}
	out := cached{current: webhook.SplitSecrets(aws.ToString(cur.SecretString)), until: now.Add(m.ttl())}
	if len(out.current) == 0 {
		return cached{}, fmt.Errorf("secret %s: %w", ref, ErrNoSecrets)
	}
	if cur.CreatedDate != nil {
		out.previousUntil = cur.CreatedDate.Add(m.grace())
		if !now.Before(out.previousUntil) {
			return out, nil // the grace is over: AWSPREVIOUS is not even read
		}
		if out.previousUntil.Before(out.until) {
			out.until = out.previousUntil
		}
	}
	prev, err := m.Client.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(ref), VersionStage: aws.String("AWSPREVIOUS")})
	var notFound *smtypes.ResourceNotFoundException
	switch {
	case errors.As(err, &notFound):
		return out, nil // no rotation has happened yet
	case err != nil:
		return cached{}, fmt.Errorf("secret %s (AWSPREVIOUS): %w: %w", ref, ErrUnavailable, err)
	}
	out.previous = webhook.SplitSecrets(aws.ToString(prev.SecretString))
	return out, nil
}

func contains(xs []string, v string) bool {
	for _, x := range xs {
		if x == v {
			return true
		}
	}
	return false
}

func (m *SecretsManager) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

func (m *SecretsManager) grace() time.Duration {
	if m.PreviousGrace > 0 {
		return m.PreviousGrace
	}
	return DefaultPreviousGrace
}

func (m *SecretsManager) ttl() time.Duration {
	if m.TTL > 0 {
		return m.TTL
	}
	return 5 * time.Minute
}
