package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/pkg/idempotency"
)

// TestRetentionDefaultsAreTheirPackages: config keeps its own copy of the
// intake's and the idempotency store's default retentions so that it
// need not import them; each copy is its package's.
func TestRetentionDefaultsAreTheirPackages(t *testing.T) {
	if config.DefaultIntakeRetention != intake.DefaultRetention {
		t.Errorf("config.DefaultIntakeRetention = %s, intake.DefaultRetention = %s", config.DefaultIntakeRetention, intake.DefaultRetention)
	}
	if config.DefaultIdempotencyRetention != idempotency.DefaultRetention {
		t.Errorf("config.DefaultIdempotencyRetention = %s, idempotency.DefaultRetention = %s", config.DefaultIdempotencyRetention, idempotency.DefaultRetention)
	}
}

// TestMaxEventAgeStaysBelowTheIntakeRetention: MAX_EVENT_AGE defaults to
// INTAKE_RETENTION less a day, and one that is not below the retention
// (or a retention that leaves no day for the default) is refused at
// start: the receiver would accept a replay whose intake record may be
// gone.
func TestMaxEventAgeStaysBelowTheIntakeRetention(t *testing.T) {
	const day = 24 * time.Hour
	tests := []struct {
		name    string
		env     map[string]string
		want    time.Duration
		wantErr string
	}{
		{name: "default", want: 34 * day},
		{name: "the default of a shorter retention", env: map[string]string{"INTAKE_RETENTION": "240h"}, want: 9 * day},
		{name: "set", env: map[string]string{"MAX_EVENT_AGE": "720h"}, want: 30 * day},
		{name: "equal to the retention", env: map[string]string{"MAX_EVENT_AGE": "840h"}, wantErr: "MAX_EVENT_AGE 840h0m0s must be below INTAKE_RETENTION 840h0m0s"},
		{name: "beyond the retention", env: map[string]string{"INTAKE_RETENTION": "240h", "MAX_EVENT_AGE": "720h"}, wantErr: "MAX_EVENT_AGE 720h0m0s must be below INTAKE_RETENTION 240h0m0s"},
		{name: "a retention of a day or less", env: map[string]string{"INTAKE_RETENTION": "20h"}, wantErr: "set MAX_EVENT_AGE below INTAKE_RETENTION 20h0m0s"},
		{name: "not a duration", env: map[string]string{"MAX_EVENT_AGE": "a month"}, wantErr: `MAX_EVENT_AGE="a month" is not a positive duration`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Given the receiver's environment, when it is read
			cfg, err := receiverFromEnv(map[string]string{"INTAKE_TABLE": "t", "QUEUE_URL_PAYMENTS": "http://q",
				"HOOKLINE_SOURCES": `[{"name":"cko","scheme":"checkout","secret_env":"S","queue":"payments"}]`}, tc.env)
			// Then the bound is the one wanted, or start-up is refused saying why
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || cfg.MaxEventAge != tc.want {
				t.Fatalf("MaxEventAge = %s, %v; want %s", cfg.MaxEventAge, err, tc.want)
			}
		})
	}
}
