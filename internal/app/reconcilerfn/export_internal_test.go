package reconcilerfn

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/app"
	"github.com/hookline/hookline/internal/app/spendledger"
	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/openmeter"
	"github.com/hookline/hookline/internal/usagein"
)

func lookupOf(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}

func TestOpenMeterSettingsReadTheExportSourcesMapping(t *testing.T) {
	env := map[string]string{"OPENMETER_URL": "https://openmeter.example", "OPENMETER_API_KEY": "om_key",
		"OPENMETER_LAG": "90s", "USAGE_EXPORT_SOURCE": "meters",
		"USAGE_MAPPINGS": `{"meters": {"format": "cloudevents", "usage_types": ["t"], "unit": "units"}}`}
	cfg, err := openMeterSettings(app.Deps{Lookup: lookupOf(env)})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Source != "meters" || cfg.Mapping.Format != usagein.FormatCloudEvents || cfg.Lag != 90*time.Second || cfg.APIKey != "om_key" {
		t.Fatalf("settings %+v", cfg)
	}
	if _, err := openmeter.New(cfg); err != nil {
		t.Fatalf("the settings build no client: %v", err)
	}
}

func TestOpenMeterSettingsReportEveryProblem(t *testing.T) {
	env := map[string]string{"OPENMETER_LAG": "soon", "USAGE_MAPPINGS": `{"meters": {"format": "nope"}}`}
	_, err := openMeterSettings(app.Deps{Lookup: lookupOf(env)})
	for _, want := range []string{"OPENMETER_URL is required", `OPENMETER_LAG="soon"`, "USAGE_MAPPINGS"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("err %v: want %q named", err, want)
		}
	}
}

func TestUsageExportNamesAnExport(t *testing.T) {
	_, err := newExport(app.Deps{Lookup: lookupOf(map[string]string{"USAGE_EXPORT": "lago"})}, config.Reconciler{}, spendledger.Ledger{})
	if err == nil || !strings.Contains(err.Error(), `USAGE_EXPORT="lago"`) {
		t.Fatalf("err %v", err)
	}
	// An OpenMeter export over a source that is not CloudEvents is refused.
	env := map[string]string{"USAGE_EXPORT": "openmeter", "OPENMETER_URL": "https://openmeter.example"}
	if _, err := newExport(app.Deps{Lookup: lookupOf(env)}, config.Reconciler{}, spendledger.Ledger{}); !errors.Is(err, openmeter.ErrInvalidConfig) {
		t.Fatalf("hookline's own format under OpenMeter: %v", err)
	}
}
