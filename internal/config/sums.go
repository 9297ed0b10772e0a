package config

import (
	"fmt"
	"strings"

	"github.com/hookline/hookline/internal/sums"
	"github.com/hookline/hookline/internal/usagein"
)

// checkSumsDoor checks the sums sources against the usage mappings where
// both are set ([sums.Sources.CheckDoor]): USAGE_MAPPINGS, and the export
// the reconciler reads, USAGE_EXPORT (hookline) over USAGE_EXPORT_SOURCE
// (usage). hookline run gives every function both. A function without
// USAGE_MAPPINGS does not know how the door reads its sources, and checks
// nothing here.
func checkSumsDoor(e *env, ss sums.Sources) {
	raw := e.optional("USAGE_MAPPINGS", "")
	if raw == "" || len(ss) == 0 {
		return
	}
	ms, err := usagein.ParseMappings([]byte(raw))
	if err != nil {
		return // the receiver's and the export's reads of it say why
	}
	export := e.optional("USAGE_EXPORT", "hookline")
	exported := map[string]bool{}
	for _, name := range strings.Split(e.optional("USAGE_EXPORT_SOURCE", "usage"), ",") {
		exported[strings.TrimSpace(name)] = true
	}
	door := func(name string) sums.Door {
		m := ms.For(name)
		names, anyName := m.Meters()
		d := sums.Door{Alerts: m.IsAlerts(), Meters: names, AnyMeter: anyName, Scale: m.Scale, Mapping: describeMeters(names, anyName)}
		if !ms.Explicit(name) {
			d.Mapping = fmt.Sprintf("none for %q, so usage.recorded, %s", name, d.Mapping)
		}
		// hookline's own export names no record's source or meter; an
		// adapter's (OpenMeter's) names both, and its records are bucketed.
		if export == "hookline" && exported[name] && m.IsReconciled() {
			d.Export = "hookline's export (USAGE_EXPORT=hookline)"
		}
		return d
	}
	if err := ss.CheckDoor(door); err != nil {
		e.errs = append(e.errs, fmt.Errorf("config: SUM_SOURCES: %w", err))
	}
}

// describeMeters names the meters a mapping's records carry.
func describeMeters(names []string, anyName bool) string {
	if anyName {
		return "any meter its pointer reads"
	}
	if len(names) == 0 {
		return "no meters"
	}
	return "meters " + strings.Join(quoteAll(names), ", ")
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}
