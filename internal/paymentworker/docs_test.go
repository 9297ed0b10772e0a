package paymentworker_test

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/hookline/hookline/internal/paymentworker"
	"github.com/hookline/hookline/pkg/webhook"
)

// effectsHeading is the section of docs/payment-providers.md whose table says,
// per preset, which events act and under which key.
const effectsHeading = "## Which events act"

// TestProvidersDocMatchesTheDefaults: the table in docs/payment-providers.md
// says what [paymentworker.PresetRule] does, for every preset: the
// events that act, the effect key and where the amount is; and a preset
// without a default says "none".
func TestProvidersDocMatchesTheDefaults(t *testing.T) {
	t.Parallel()
	rows := effectsTable(t)
	want := map[string]paymentworker.Mapping{}
	for _, s := range webhook.Schemes() {
		if r, ok := paymentworker.PresetRule(s, ""); ok {
			want["`"+string(s)+"`"] = r
		}
	}
	delayed, _ := paymentworker.PresetRule(webhook.SchemeAdyen, paymentworker.CaptureDelayed)
	want["`adyen` (capture `delayed`)"] = delayed
	for name, r := range want {
		row, ok := rows[name]
		if !ok {
			t.Errorf("docs/payment-providers.md %q: no row for %s", effectsHeading, name)
			continue
		}
		if got, w := row[1], actsCell(r); got != w {
			t.Errorf("%s acts on: the doc says %q, the code %q", name, got, w)
		}
		if got, w := row[2], "`"+r.EffectKey+"`"; got != w {
			t.Errorf("%s effect key: the doc says %q, the code %q", name, got, w)
		}
		if got, w := row[3], amountCell(r); got != w {
			t.Errorf("%s amount: the doc says %q, the code %q", name, got, w)
		}
		if len(row) < 7 || row[4] == "" || strings.HasPrefix(row[4], "none") {
			t.Errorf("%s: the doc does not say what one money movement is", name)
		}
	}
	for _, s := range []webhook.Scheme{webhook.SchemeGitHub, webhook.SchemeShopify, webhook.SchemeBraintree} {
		if row, ok := rows["`"+string(s)+"`"]; !ok || !strings.HasPrefix(row[1], "none") {
			t.Errorf("%s has no default rule, and the doc's row %q does not say none", s, row)
		}
	}
}

// TestProvidersDocMappingParses: the PAYMENT_MAPPINGS example of the
// section parses as it stands.
func TestProvidersDocMappingParses(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../docs/payment-providers.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(raw), "\n"+effectsHeading)
	_, block, ok := strings.Cut(section, "```json\n")
	block, _, _ = strings.Cut(block, "```")
	if !ok {
		t.Fatal("no PAYMENT_MAPPINGS example")
	}
	if _, err := paymentworker.ParseMappings([]byte(block)); err != nil {
		t.Fatalf("the example does not parse: %v", err)
	}
}

// upgradeHeading is the section of docs/payment-providers.md whose table lists
// the mappings of an earlier build refused at start, and their fixes.
const upgradeHeading = "## Upgrading from an earlier build"

// TestProvidersDocUpgradesAreTrue: each row of the upgrade table is
// what the code does: the earlier mapping, on a source of the row's
// scheme, is refused at start with what the row says, and the fix
// starts.
func TestProvidersDocUpgradesAreTrue(t *testing.T) {
	t.Parallel()
	rows := docRows(t, upgradeHeading)
	if len(rows) < 4 {
		t.Fatalf("docs/payment-providers.md %q: %d rows", upgradeHeading, len(rows))
	}
	for _, row := range rows {
		scheme := strings.Trim(row[0], "`")
		sources := []webhook.SourceSpec{{Name: "shop", Scheme: webhook.Scheme(scheme), Queue: paymentworker.PaymentsQueue}}
		parse := func(cell string) error {
			_, err := paymentworker.ParseMappingsFor([]byte(`{"shop": `+strings.Trim(cell, "`")+`}`), sources)
			return err
		}
		says := strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(row[2], "``"), "``"))
		if err := parse(row[1]); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("%s %s: error %v, the doc says %q", scheme, row[1], err, says)
		}
		if err := parse(row[3]); err != nil {
			t.Errorf("%s: the fix %s is refused: %v", scheme, row[3], err)
		}
	}
}

// effectsTable reads the table under effectsHeading: each row's cells by
// its first cell.
func effectsTable(t *testing.T) map[string][]string {
	t.Helper()
	rows := map[string][]string{}
	for _, cells := range docRows(t, effectsHeading) {
		rows[cells[0]] = cells
	}
	return rows
}

// docRows reads the rows of the table under heading in
// docs/payment-providers.md whose first cell is code, each as its cells.
func docRows(t *testing.T, heading string) [][]string {
	t.Helper()
	raw, err := os.ReadFile("../../docs/payment-providers.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n"+heading)
	if !ok {
		t.Fatalf("docs/payment-providers.md has no %q section", heading)
	}
	var rows [][]string
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "## ") {
			break
		}
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		var cells []string
		for _, c := range strings.Split(strings.Trim(line, "|"), " | ") {
			cells = append(cells, strings.TrimSpace(c))
		}
		if len(cells) >= 4 {
			rows = append(rows, cells)
		}
	}
	return rows
}

// actsCell is how the doc writes a rule's act_when.
func actsCell(r paymentworker.Mapping) string {
	var parts []string
	for _, ptr := range slices.Sorted(maps.Keys(r.ActWhen)) {
		var values []string
		for _, v := range r.ActWhen[ptr] {
			values = append(values, "`"+v+"`")
		}
		parts = append(parts, fmt.Sprintf("`%s` = %s", ptr, strings.Join(values, " or ")))
	}
	return strings.Join(parts, " and ")
}

// amountCell is how the doc writes where the amount is.
func amountCell(r paymentworker.Mapping) string {
	format := r.AmountFormat
	if format == "" {
		format = paymentworker.AmountMinor
	}
	return fmt.Sprintf("`%s` in `%s`, %s", r.Amount, r.Currency, format)
}
