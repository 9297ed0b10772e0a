package config

import (
	"fmt"
	"strings"

	"github.com/hookline/hookline/internal/usagein"
	"github.com/hookline/hookline/pkg/webhook"
)

// Usage is how the door reads its usage sources.
type Usage struct {
	// Mappings are USAGE_MAPPINGS: each usage source's format, meter,
	// value, unit and time rule ([usagein.ParseMappings]).
	Mappings *usagein.Mappings
	// WorkloadUnit is SPEND_UNIT, the unit every workload's cap counts
	// (default "units"): a usage source of another unit is refused at
	// start.
	WorkloadUnit string
}

// usageFromEnv reads USAGE_MAPPINGS and SPEND_UNIT, and refuses a mapping
// the sources cannot take ([usagein.Mappings.CheckSources]).
func usageFromEnv(e *env, specs []webhook.SourceSpec) Usage {
	u := Usage{WorkloadUnit: e.optional("SPEND_UNIT", usagein.DefaultUnit)}
	if raw := e.optional("USAGE_MAPPINGS", ""); raw != "" {
		ms, err := usagein.ParseMappings([]byte(raw))
		if err != nil {
			e.errs = append(e.errs, fmt.Errorf("config: USAGE_MAPPINGS: %w", err))
			return u
		}
		u.Mappings = ms
	}
	if len(specs) == 0 {
		return u
	}
	if err := u.Mappings.CheckSources(specs, u.WorkloadUnit); err != nil {
		e.errs = append(e.errs, fmt.Errorf("config: USAGE_MAPPINGS: %w", err))
	}
	return u
}

// exportRuleFromEnv is the time rule of the usage source whose records the
// reconciler's export holds: USAGE_EXPORT_SOURCE (default "usage") in
// USAGE_MAPPINGS, so that the export path ages a record as the door did.
// When the export holds several sources (a comma-separated list), it is
// the loosest of their rules: the export's adapter has already held each
// record to its own source's rule.
func exportRuleFromEnv(e *env) usagein.TimeRule {
	source := e.optional("USAGE_EXPORT_SOURCE", "usage") // the template's usage source
	raw := e.optional("USAGE_MAPPINGS", "")
	if raw == "" {
		return usagein.DefaultTimeRule
	}
	ms, err := usagein.ParseMappings([]byte(raw))
	if err != nil {
		e.errs = append(e.errs, fmt.Errorf("config: USAGE_MAPPINGS: %w", err))
		return usagein.DefaultTimeRule
	}
	var rule usagein.TimeRule
	for _, name := range strings.Split(source, ",") {
		r := ms.For(strings.TrimSpace(name)).Rule()
		rule.MaxAge, rule.MaxSkew = max(rule.MaxAge, r.MaxAge), max(rule.MaxSkew, r.MaxSkew)
	}
	return rule
}
