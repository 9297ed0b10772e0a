package config

import (
	"strings"
	"testing"
	"time"
)

func TestReconcilerFromEnv(t *testing.T) {
	base := map[string]string{
		"LEDGER_TABLE": "ledger", "WORKLOADS_TABLE": "workloads", "RECON_ROUTING_KEY": "rk",
		"PROVIDER_URL": "http://127.0.0.1:9",
	}
	tests := []struct {
		name    string
		env     map[string]string
		wantErr []string
		check   func(t *testing.T, c Reconciler)
	}{
		{name: "defaults", check: func(t *testing.T, c Reconciler) {
			if c.Overlap != 10*time.Minute || c.Lag != 2*time.Minute || c.Horizon != 30*time.Minute ||
				c.NearCapRatio != 0.8 || c.ActiveInterval != 15*time.Minute || c.QuietInterval != time.Hour ||
				c.PollInterval != 5*time.Minute || c.FoldConcurrency != 8 || c.UsagePageLimit != 500 {
				t.Fatalf("defaults = %+v", c)
			}
		}},
		{name: "overrides", env: map[string]string{"OVERLAP_WINDOW": "15m", "NEAR_CAP_RATIO": "0.9",
			"POLL_MAX_AGE": "45m", "QUIET_AFTER": "12h"}, check: func(t *testing.T, c Reconciler) {
			if c.Overlap != 15*time.Minute || c.NearCapRatio != 0.9 || c.Horizon != 45*time.Minute || c.QuietAfter != 12*time.Hour {
				t.Fatalf("overrides = %+v", c)
			}
		}},
		{name: "every problem at once", env: map[string]string{"RECON_ROUTING_KEY": "", "PROVIDER_URL": "",
			"NEAR_CAP_RATIO": "1.5", "CONSISTENCY_LAG": "soon"},
			wantErr: []string{"RECON_ROUTING_KEY", "PROVIDER_URL", "NEAR_CAP_RATIO", "CONSISTENCY_LAG"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Given an environment
			env := map[string]string{}
			for k, v := range base {
				env[k] = v
			}
			for k, v := range tc.env {
				env[k] = v
			}

			// When the reconciler's config is read
			c, err := ReconcilerFromEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })

			// Then it has the defaults and overrides, or names every problem
			for _, w := range tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Fatalf("err = %v, want it to name %s", err, w)
				}
			}
			if len(tc.wantErr) == 0 && err != nil {
				t.Fatal(err)
			}
			if tc.check != nil {
				tc.check(t, c)
			}
		})
	}
}

// openAISums is SUM_SOURCES with one OpenAI source.
const openAISums = `{"openai-org": {"provider": "openai", "usage_source": "llm", "account": "org_1",
	"start": "2026-11-01T00:00:00Z", "meters": {"tokens": {"endpoint": "completions", "field": "input_tokens"}}}}`

func TestReconcilerOpenAIAdminKey(t *testing.T) {
	base := map[string]string{
		"LEDGER_TABLE": "ledger", "WORKLOADS_TABLE": "workloads", "RECON_ROUTING_KEY": "rk",
		"PROVIDER_URL": "http://127.0.0.1:9",
	}
	const key = "sk-admin-abc123"
	tests := []struct {
		name     string
		env      map[string]string
		wantErr  string
		wantKey  string
		wantRate float64
	}{
		{name: "an OpenAI source with its key", env: map[string]string{"SUM_SOURCES": openAISums, "OPENAI_ADMIN_KEY": key},
			wantKey: key, wantRate: 5},
		{name: "a rate", env: map[string]string{"SUM_SOURCES": openAISums, "OPENAI_ADMIN_KEY": key, "OPENAI_USAGE_RATE": "2"},
			wantKey: key, wantRate: 2},
		{name: "an OpenAI source without the key", env: map[string]string{"SUM_SOURCES": openAISums},
			wantErr: "OPENAI_ADMIN_KEY is required"},
		{name: "a project key instead of an admin key", env: map[string]string{"SUM_SOURCES": openAISums,
			"OPENAI_ADMIN_KEY": "sk-proj-secret"}, wantErr: "OPENAI_ADMIN_KEY is not an OpenAI admin key"},
		{name: "a bad rate", env: map[string]string{"SUM_SOURCES": openAISums, "OPENAI_ADMIN_KEY": key,
			"OPENAI_USAGE_RATE": "fast"}, wantErr: "OPENAI_USAGE_RATE"},
		{name: "no OpenAI source, no key needed", wantRate: 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Given an environment
			env := map[string]string{}
			for k, v := range base {
				env[k] = v
			}
			for k, v := range tc.env {
				env[k] = v
			}

			// When the reconciler's config is read
			c, err := ReconcilerFromEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })

			// Then it holds the key and rate, or refuses without echoing a key
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "secret") {
					t.Fatalf("err = %v, want it to say %q and hold no key", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.OpenAIAdminKey != tc.wantKey || c.OpenAIUsageRate != tc.wantRate {
				t.Fatalf("key %q rate %v, want %q %v", c.OpenAIAdminKey, c.OpenAIUsageRate, tc.wantKey, tc.wantRate)
			}
		})
	}
}
