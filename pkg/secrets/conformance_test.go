package secrets_test

import (
	"net/http/httptest"
	"testing"

	"github.com/hookline/hookline/pkg/secrets"
	"github.com/hookline/hookline/pkg/secrets/secretstest"
)

func TestEnvConformance(t *testing.T) {
	secretstest.Run(t, func(_ *testing.T, stored map[string]string) secrets.Provider {
		return secrets.Env{Lookup: func(k string) (string, bool) { v, ok := stored[k]; return v, ok }}
	})
}

func TestSecretsManagerConformance(t *testing.T) {
	secretstest.Run(t, func(t *testing.T, stored map[string]string) secrets.Provider {
		srv := httptest.NewServer(&fakeSecretsManager{byID: stored})
		t.Cleanup(srv.Close)
		return &secrets.SecretsManager{Client: client(srv.URL)}
	})
}
