package paymentworker_test

import (
	"bufio"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/hookline/hookline/internal/paymentworker"
)

// decimalMapping reads a decimal amount at /v in the currency at /cur;
// scheme is the source's scheme ("" for a generic source).
func decimalMapping(scheme string) paymentworker.Mapping {
	return paymentworker.Mapping{Scheme: scheme, EventID: "/id", Customer: "/c", Amount: "/v", Currency: "/cur",
		AmountFormat: paymentworker.AmountDecimal}
}

// decimalAmount applies m to a body holding value in cur.
func decimalAmount(m paymentworker.Mapping, value, cur string) (int64, error) {
	req, err := m.Apply([]byte(`{"id":"e1","c":"cus_1","cur":"`+cur+`","v":"`+value+`"}`), "")
	return req.Amount, err
}

// A decimalCase is a decimal amount and the minor units it is, or the
// error it is refused with.
type decimalCase struct {
	name, value, cur string
	want             int64
	refused          error
}

// checkDecimals reads each case's amount under m.
func checkDecimals(t *testing.T, m paymentworker.Mapping, tests []decimalCase) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// Given a decimal amount in the currency, when it is read,
			// then it is that many of ISO's minor units, or refused.
			got, err := decimalAmount(m, tc.value, tc.cur)
			switch {
			case tc.refused != nil && !errors.Is(err, tc.refused):
				t.Fatalf("%q %s: %d, %v; want refused with %v", tc.value, tc.cur, got, err, tc.refused)
			case tc.refused == nil && (err != nil || got != tc.want):
				t.Fatalf("%q %s: %d, %v; want %d", tc.value, tc.cur, got, err, tc.want)
			}
		})
	}
}

// TestDecimalAmountsUseISOMinorUnits: a decimal amount is scaled by the
// currency's minor unit in ISO 4217, not by how many decimals the
// currency is usually displayed with.
func TestDecimalAmountsUseISOMinorUnits(t *testing.T) {
	t.Parallel()
	checkDecimals(t, decimalMapping(""), []decimalCase{
		{name: "rupiah has 2 decimals", value: "150000.00", cur: "IDR", want: 15000000},
		{name: "iraqi dinar has 3", value: "1000.000", cur: "IQD", want: 1000000},
		{name: "colombian peso has 2", value: "25000.50", cur: "COP", want: 2500050},
		{name: "ouguiya", value: "100.20", cur: "MRU", want: 10020},
		{name: "leone", value: "75.25", cur: "SLE", want: 7525},
		{name: "bolivar soberano", value: "12.34", cur: "VES", want: 1234},
		{name: "digital bolivar", value: "12.34", cur: "VED", want: 1234},
		{name: "unidad previsional has 4", value: "1.2345", cur: "UYW", want: 12345},
		{name: "pakistan rupee", value: "10.01", cur: "PKR", want: 1001},
		{name: "mauritius rupee", value: "10.01", cur: "MUR", want: 1001},
		{name: "tanzanian shilling", value: "10.01", cur: "TZS", want: 1001},
		{name: "uzbekistan sum", value: "10.01", cur: "UZS", want: 1001},
		{name: "serbian dinar", value: "10.01", cur: "RSD", want: 1001},
		{name: "lebanese pound", value: "10.01", cur: "LBP", want: 1001},
		{name: "iranian rial", value: "10.01", cur: "IRR", want: 1001},
		{name: "zimbabwe gold", value: "10.01", cur: "ZWG", want: 1001},
		{name: "caribbean guilder", value: "10.01", cur: "XCG", want: 1001},
		{name: "lower case", value: "150000", cur: "idr", want: 15000000},
	})
}

// TestWithdrawnCodesAreRefused: a code ISO 4217 no longer lists has no
// minor unit to scale by.
func TestWithdrawnCodesAreRefused(t *testing.T) {
	t.Parallel()
	for _, cur := range []string{"HRK", "SLL", "ZWL", "ANG", "CUC", "BGN", "VEF", "MRO", "XYZ", "US", "USDX", "ÜSD"} {
		if got, err := decimalAmount(decimalMapping(""), "1.00", cur); err == nil || !strings.Contains(err.Error(), "not an ISO 4217 code") {
			t.Errorf("%s: %d, %v; want refused as not an ISO 4217 code", cur, got, err)
		}
	}
}

// TestCodesWithNoMinorUnitAreRefused: ISO 4217 gives metals, units of
// account, XTS and XXX no minor unit ("N.A."), so a decimal amount in
// one cannot be turned into minor units.
func TestCodesWithNoMinorUnitAreRefused(t *testing.T) {
	t.Parallel()
	for _, cur := range []string{"XAU", "XAG", "XPD", "XPT", "XDR", "XXX", "XTS", "XBA", "XSU", "XUA", "xau"} {
		got, err := decimalAmount(decimalMapping(""), "1", cur)
		if !errors.Is(err, paymentworker.ErrNoMinorUnit) || !strings.Contains(err.Error(), "no minor unit in ISO 4217") {
			t.Errorf("%s: %d, %v; want refused for having no minor unit", cur, got, err)
		}
	}
	// Given such a message on the queue, then it is malformed, and its
	// dead-letter reason says why.
	dec := decimalMapping("")
	dec.ActWhen = map[string][]string{"/t": {"pay"}}
	ms, err := paymentworker.NewMappings(map[string]paymentworker.Mapping{"dec": dec})
	must(t, err)
	_, err = paymentworker.ParseMessageWith(mappingMessage("dec", `{"id":"e1","t":"pay","c":"cus_1","cur":"XAU","v":"1.5"}`), ms)
	if !errors.Is(err, paymentworker.ErrMalformed) || !errors.Is(err, paymentworker.ErrNoMinorUnit) {
		t.Fatalf("1.5 XAU on the queue: %v; want malformed for having no minor unit", err)
	}
	if reason := paymentworker.MalformedReason(err); !strings.Contains(reason, "amount: /v is in a currency with no minor unit in ISO 4217") {
		t.Fatalf("dead-letter reason %q", reason)
	}
}

// TestPayPalTakesNoDecimalsInHUFJPYAndTWD: PayPal's API writes HUF, JPY
// and TWD without decimals (developer.paypal.com/reference/currency-codes).
// A PayPal amount with a fraction in one of them is refused, naming
// PayPal's rule; a whole amount is counted in ISO's minor units, which
// the effect takes (1000 HUF is 100000 fillér).
func TestPayPalTakesNoDecimalsInHUFJPYAndTWD(t *testing.T) {
	t.Parallel()
	paypal := decimalMapping("paypal")
	checkDecimals(t, paypal, []decimalCase{
		{name: "whole forints", value: "1000", cur: "HUF", want: 100000},
		{name: "whole forints with zero decimals", value: "1000.00", cur: "HUF", want: 100000},
		{name: "whole yen", value: "1200", cur: "JPY", want: 1200},
		{name: "whole new taiwan dollars", value: "30", cur: "TWD", want: 3000},
		{name: "forints with a fraction", value: "100.50", cur: "HUF", refused: paymentworker.ErrProviderDecimals},
		{name: "new taiwan dollars with a fraction", value: "30.5", cur: "twd", refused: paymentworker.ErrProviderDecimals},
		{name: "yen with a fraction", value: "1200.5", cur: "JPY", refused: paymentworker.ErrProviderDecimals},
		{name: "euros keep their cents", value: "9.90", cur: "EUR", want: 990},
	})
	if _, err := decimalAmount(paypal, "100.50", "HUF"); err == nil || !strings.Contains(err.Error(), "PayPal takes HUF, JPY and TWD without decimals") {
		t.Fatalf("PayPal 100.50 HUF: %v; want PayPal's rule named", err)
	}
	// Given another provider, forints with a fraction are ISO's fillér.
	if got, err := decimalAmount(decimalMapping("mollie"), "100.50", "HUF"); err != nil || got != 10050 {
		t.Fatalf("mollie 100.50 HUF: %d, %v; want 10050", got, err)
	}
}

// isoEntry is one code of ISO 4217 list one; minor is -1 for "N.A.".
type isoEntry struct {
	code  string
	minor int
}

// readListOne reads testdata/iso4217-list-one.tsv, ISO's table fixed
// with its publication date.
func readListOne(t *testing.T) (published string, entries []isoEntry) {
	t.Helper()
	f, err := os.Open("testdata/iso4217-list-one.tsv")
	must(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if date, ok := strings.CutPrefix(line, "# Pblshd: "); ok {
			published = date
		}
		if strings.HasPrefix(line, "#") || strings.HasPrefix(line, "Ccy\t") {
			continue
		}
		cols := strings.Split(line, "\t")
		if len(cols) != 4 {
			t.Fatalf("list one: %q has %d columns, want 4", line, len(cols))
		}
		e := isoEntry{code: cols[0], minor: -1}
		if cols[2] != "N.A." {
			if e.minor, err = strconv.Atoi(cols[2]); err != nil {
				t.Fatalf("list one: %s: minor unit %q", cols[0], cols[2])
			}
		}
		entries = append(entries, e)
	}
	must(t, sc.Err())
	return published, entries
}

// TestEveryISOCodeHasISOsMinorUnit holds the product to ISO 4217's own
// table, not to the library it reads: for each active code, the
// smallest amount one minor unit allows is accepted, one digit more is
// refused, and a code ISO gives no minor unit is refused.
func TestEveryISOCodeHasISOsMinorUnit(t *testing.T) {
	t.Parallel()
	published, entries := readListOne(t)
	if published != "2026-01-01" || len(entries) != 178 {
		t.Fatalf("list one: Pblshd %q with %d codes, want 2026-01-01 with 178", published, len(entries))
	}
	m := decimalMapping("")
	for _, e := range entries {
		if e.minor < 0 {
			if got, err := decimalAmount(m, "1", e.code); !errors.Is(err, paymentworker.ErrNoMinorUnit) {
				t.Errorf("%s (N.A. in ISO 4217): %d, %v; want refused for having no minor unit", e.code, got, err)
			}
			continue
		}
		// Given "1" and, with minor units, the smallest amount ("0.01"),
		// then they are 10^minor and 1 minor units.
		want := int64(1)
		for range e.minor {
			want *= 10
		}
		if got, err := decimalAmount(m, "1", e.code); err != nil || got != want {
			t.Errorf("%s (%d in ISO 4217): \"1\" is %d, %v; want %d", e.code, e.minor, got, err, want)
		}
		if e.minor > 0 {
			unit := "0." + strings.Repeat("0", e.minor-1) + "1"
			if got, err := decimalAmount(m, unit, e.code); err != nil || got != 1 {
				t.Errorf("%s (%d in ISO 4217): %q is %d, %v; want 1", e.code, e.minor, unit, got, err)
			}
		}
		// When one more decimal is written, then it does not scale.
		tooFine := "0." + strings.Repeat("0", e.minor) + "1"
		if got, err := decimalAmount(m, tooFine, e.code); err == nil || !strings.Contains(err.Error(), "does not scale exactly") {
			t.Errorf("%s (%d in ISO 4217): %q is %d, %v; want refused", e.code, e.minor, tooFine, got, err)
		}
	}
}
