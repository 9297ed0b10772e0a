package openmeter_test

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/openmeter"
)

func TestParseAlertReadsTheCurrentPeriod(t *testing.T) {
	t.Parallel()
	body, err := os.ReadFile("testdata/balance_threshold.json")
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // the same bytes read twice read the same
		a, err := openmeter.ParseAlert(body)
		if err != nil {
			t.Fatal(err)
		}
		day := time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC)
		if a.EventID != "01J2KNP1YTXQRXHTDJ4KPR7PZ0" || a.Meter != "tokens_total" || a.Subject != "wl_a" || a.Usage != "150.5" ||
			!a.PeriodFrom.Equal(day) || !a.PeriodTo.Equal(day.Add(24*time.Hour)) || a.ThresholdType != "usage_value" {
			t.Fatalf("alert %+v", a)
		}
		if n, err := a.Units(1000); err != nil || n != 150500 {
			t.Fatalf("units %d %v", n, err)
		}
		if _, err := a.Units(1); !errors.Is(err, openmeter.ErrBadAlert) {
			t.Fatalf("150.5 at scale 1: %v", err)
		}
	}
}

func TestParseAlertRefusesWhatCannotBeCompared(t *testing.T) {
	t.Parallel()
	body, err := os.ReadFile("testdata/balance_threshold.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, from, to string
		want           error
		field          string
	}{
		{"another type", `"entitlements.balance.threshold"`, `"entitlements.reset"`, openmeter.ErrNotAlert, ""},
		{"no period", `"currentUsagePeriod"`, `"currentUsagePeriodX"`, openmeter.ErrBadAlert, "currentUsagePeriod"},
		{"no usage", `"usage": 150.5`, `"used": 150.5`, openmeter.ErrBadAlert, "data.value.usage"},
		{"no meter", `"meterSlug"`, `"meter"`, openmeter.ErrBadAlert, "meterSlug"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := openmeter.ParseAlert([]byte(strings.Replace(string(body), tc.from, tc.to, 1)))
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("err %v, want %v naming %q", err, tc.want, tc.field)
			}
		})
	}
}
