package config

import (
	"fmt"

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
