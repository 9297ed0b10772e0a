package config

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func mapLookup(m map[string]string) Lookup {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestWithSecrets(t *testing.T) {
	store := map[string]string{"arn:provider-key": "pk_live_123", "arn:routing": "R0UTING", "arn:empty": " "}
	read := func(_ context.Context, id string) (string, error) {
		v, ok := store[id]
		if !ok {
			return "", errors.New("secrets: not found")
		}
		return v, nil
	}
	t.Run("names come from their secrets, others from the environment", func(t *testing.T) {
		lookup, err := WithSecrets(context.Background(), mapLookup(map[string]string{
			"PROVIDER_API_KEY_SECRET_ID": "arn:provider-key", "RECON_ROUTING_KEY_SECRET_ID": "arn:routing", "PROVIDER_URL": "https://p",
		}), read, SecretVars...)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := ReconcilerFromEnv(func(k string) (string, bool) {
			if k == "LEDGER_TABLE" || k == "WORKLOADS_TABLE" {
				return "t", true
			}
			return lookup(k)
		})
		if err != nil {
			t.Fatal(err)
		}
		if cfg.ProviderAPIKey != "pk_live_123" || cfg.ReconRoutingKey != "R0UTING" || cfg.ProviderURL != "https://p" {
			t.Fatalf("got key %q routing %q url %q", cfg.ProviderAPIKey, cfg.ReconRoutingKey, cfg.ProviderURL)
		}
	})
	t.Run("a plain variable still works", func(t *testing.T) {
		lookup, err := WithSecrets(context.Background(), mapLookup(map[string]string{"PROVIDER_API_KEY": "plain"}), read, SecretVars...)
		if v, _ := lookup("PROVIDER_API_KEY"); err != nil || v != "plain" {
			t.Fatalf("got %q, %v", v, err)
		}
	})
	t.Run("every problem at once, never a value", func(t *testing.T) {
		_, err := WithSecrets(context.Background(), mapLookup(map[string]string{
			"PROVIDER_API_KEY": "plain", "PROVIDER_API_KEY_SECRET_ID": "arn:provider-key",
			"RECON_ROUTING_KEY_SECRET_ID": "arn:missing",
		}), read, SecretVars...)
		if err == nil || !strings.Contains(err.Error(), "both set") || !strings.Contains(err.Error(), "arn:missing") {
			t.Fatalf("err = %v", err)
		}
		if strings.Contains(err.Error(), "pk_live_123") || strings.Contains(err.Error(), "plain") {
			t.Fatalf("a value leaked into the error: %v", err)
		}
		if _, err := WithSecrets(context.Background(), mapLookup(map[string]string{"RECON_ROUTING_KEY_SECRET_ID": "arn:empty"}), read, SecretVars...); err == nil {
			t.Fatal("an empty secret was accepted")
		}
		if _, err := WithSecrets(context.Background(), mapLookup(map[string]string{"RECON_ROUTING_KEY_SECRET_ID": "arn:routing"}), nil, SecretVars...); err == nil {
			t.Fatal("no reader, yet accepted")
		}
	})
}
