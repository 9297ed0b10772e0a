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

// SecretsManager reads a source's secret by ARN or name, accepting both the
// AWSCURRENT and AWSPREVIOUS versions, with a per-process cache.
type SecretsManager struct {
	Client SecretsManagerAPI
	// TTL bounds how stale a cached value may be (default 5 minutes), so a
	// rotation is picked up without a redeploy.
	TTL time.Duration
	Now func() time.Time

	mu    sync.Mutex
	cache map[string]cached
}

type cached struct {
	values []string
	until  time.Time
}

var _ Provider = (*SecretsManager)(nil)

// Secrets implements [Provider].
func (m *SecretsManager) Secrets(ctx context.Context, ref string) ([]string, error) {
	now := m.now()
	m.mu.Lock()
	c, ok := m.cache[ref]
	m.mu.Unlock()
	if ok && now.Before(c.until) {
		return c.values, nil
	}
	values, err := m.fetch(ctx, ref)
	if err != nil {
		if ok {
			// A stale value beats refusing every webhook while the store
			// is briefly unreachable; rotation keeps the old one valid.
			return c.values, nil
		}
		return nil, err
	}
	m.mu.Lock()
	if m.cache == nil {
		m.cache = map[string]cached{}
	}
	m.cache[ref] = cached{values: values, until: now.Add(m.ttl())}
	m.mu.Unlock()
	return values, nil
}

func (m *SecretsManager) fetch(ctx context.Context, ref string) ([]string, error) {
	var out []string
	for _, stage := range []string{"AWSCURRENT", "AWSPREVIOUS"} {
		res, err := m.Client.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(ref), VersionStage: aws.String(stage)})
		var notFound *smtypes.ResourceNotFoundException
		if stage == "AWSPREVIOUS" && errors.As(err, &notFound) {
			break // no rotation has happened yet
		}
		if err != nil {
			return nil, fmt.Errorf("secret %s (%s): %w: %w", ref, stage, ErrUnavailable, err)
		}
		for _, v := range webhook.SplitSecrets(aws.ToString(res.SecretString)) {
			if !contains(out, v) {
				out = append(out, v)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("secret %s: %w", ref, ErrNoSecrets)
	}
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

func (m *SecretsManager) ttl() time.Duration {
	if m.TTL > 0 {
		return m.TTL
	}
	return 5 * time.Minute
}
