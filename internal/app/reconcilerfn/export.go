package reconcilerfn

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hookline/hookline/internal/app"
	"github.com/hookline/hookline/internal/app/spendledger"
	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/openmeter"
	"github.com/hookline/hookline/internal/paced"
	"github.com/hookline/hookline/internal/reconcile"
	"github.com/hookline/hookline/internal/usagein"
	"github.com/hookline/hookline/pkg/provider"
)

// Usage exports the reconciler reads (USAGE_EXPORT).
const (
	// ExportHookline is the provider's GET /v1/usage (the default).
	ExportHookline = "hookline"
	// ExportOpenMeter is OpenMeter's GET /api/v2/events, holding the
	// CloudEvents of the usage source USAGE_EXPORT_SOURCE.
	ExportOpenMeter = "openmeter"
)

// newExport builds the reconciler's per-record export, chosen by
// USAGE_EXPORT: hookline's own (PROVIDER_URL) or OpenMeter's
// ([openMeterSettings]).
func newExport(d app.Deps, cfg config.Reconciler, ledger spendledger.Ledger) (reconcile.Export, error) {
	kind, _ := d.Lookup("USAGE_EXPORT")
	switch kind {
	case "", ExportHookline:
		return provider.New(provider.Config{BaseURL: cfg.ProviderURL, APIKey: cfg.ProviderAPIKey,
			Timeout: cfg.ProviderTimeout, UsagePageLimit: cfg.UsagePageLimit, Logger: d.Log()})
	case ExportOpenMeter:
		om, err := openMeterSettings(d)
		if err != nil {
			return nil, err
		}
		om.Pages, om.RoutingKey = ledger.Outbox, cfg.ReconRoutingKey
		om.Metrics = d.EMF().With(map[string]any{"function": "reconciler"})
		return openmeter.New(om)
	}
	return nil, fmt.Errorf("config: USAGE_EXPORT=%q: want %s or %s", kind, ExportHookline, ExportOpenMeter)
}

// openMeterSettings reads OpenMeter's settings: OPENMETER_URL (required),
// OPENMETER_API_KEY, OPENMETER_WORKLOAD (subject or customer),
// OPENMETER_LAG (2m) and OPENMETER_MAX_LAG (6h), and the usage sources
// its events come in on at the door, USAGE_EXPORT_SOURCE (usage; a
// comma-separated list when the producer tees several, such as tokens and
// GPU hours at different scales), each with its mapping from
// USAGE_MAPPINGS. Every problem is reported at once.
func openMeterSettings(d app.Deps) (openmeter.Config, error) {
	get := func(k string) string { v, _ := d.Lookup(k); return v }
	var errs []error
	dur := func(k string) time.Duration {
		if get(k) == "" {
			return 0
		}
		v, err := time.ParseDuration(get(k))
		if err != nil || v < 0 {
			errs = append(errs, fmt.Errorf("config: %s=%q is not a duration", k, get(k)))
		}
		return v
	}
	cfg := openmeter.Config{BaseURL: get("OPENMETER_URL"), APIKey: get("OPENMETER_API_KEY"), Workload: get("OPENMETER_WORKLOAD"),
		Lag: dur("OPENMETER_LAG"), MaxLag: dur("OPENMETER_MAX_LAG"), Source: get("USAGE_EXPORT_SOURCE"), Logger: d.Log()}
	if cfg.BaseURL == "" {
		errs = append(errs, errors.New("config: OPENMETER_URL is required with USAGE_EXPORT=openmeter"))
	}
	if cfg.Source == "" {
		cfg.Source = "usage"
	}
	ms, err := usagein.ParseMappings([]byte(cmpOr(get("USAGE_MAPPINGS"), "{}")))
	if err != nil {
		errs = append(errs, fmt.Errorf("config: USAGE_MAPPINGS: %w", err))
	}
	names := strings.Split(cfg.Source, ",")
	cfg.Source = strings.TrimSpace(names[0])
	cfg.Mapping = ms.For(cfg.Source)
	for _, name := range names[1:] {
		name = strings.TrimSpace(name)
		cfg.More = append(cfg.More, openmeter.ExportSource{Name: name, Mapping: ms.For(name)})
	}
	return cfg, errors.Join(errs...)
}

// newOpenMeterReader reads an OpenMeter sums source's meter query, at its
// base_url or OPENMETER_URL, with OPENMETER_API_KEY, through call when it
// is not nil.
func newOpenMeterReader(d app.Deps, baseURL string, call *paced.Client) (*openmeter.Reader, error) {
	return openmeter.NewReader(openmeter.Config{BaseURL: cmpOr(baseURL, lookup(d, "OPENMETER_URL")),
		APIKey: lookup(d, "OPENMETER_API_KEY"), Logger: d.Log(), Paced: call})
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
