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
