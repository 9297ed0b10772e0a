package provider_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hookline/hookline/pkg/provider"
)

// An adapter's source, meter and unit are the reader's, not the wire's:
// GET /v1/usage neither writes nor reads them.
func TestARecordsSourceAndMeterAreNotOnTheWire(t *testing.T) {
	t.Parallel()
	// Given a record an adapter gave its source, meter and unit
	rec := provider.UsageRecord{RecordID: "ur_1", WorkloadRef: "wl-a", Units: 3, OccurredAt: t0, PublishedAt: t0,
		Source: "meters", Meter: "tokens", Unit: "units"}
	// When it is written as the export writes a record
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	// Then none of them is in the body,
	for _, name := range []string{`"source"`, `"meter"`, `"unit"`, `"Source"`, `"Meter"`, `"Unit"`} {
		if strings.Contains(string(b), name) {
			t.Fatalf("%s in %s", name, b)
		}
	}
	// and a page read back names none.
	pg, err := provider.DecodeUsagePage([]byte(`{"records": [` + string(b) + `]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := pg.Records[0]; got.Source != "" || got.Meter != "" || got.Unit != "" {
		t.Fatalf("decoded %+v, want no source, meter or unit", got)
	}
}
