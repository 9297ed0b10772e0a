package price_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/price"
)

func TestRoundedIsTheCeilingOnce(t *testing.T) {
	tests := []struct {
		name    string
		scale   price.Scale
		units   []int64
		price   string
		exact   string
		nano    int64
		rounded int64
	}{
		{name: "2.5 a token, 1001 tokens", scale: 6, units: []int64{1001}, price: "2.5", exact: "2502.500000", nano: 2_502_500_000, rounded: 2503},
		{name: "whole", scale: 6, units: []int64{1000}, price: "2.5", exact: "2500.000000", nano: 2_500_000_000, rounded: 2500},
		{name: "a millionth over", scale: 6, units: []int64{1}, price: "1.000001", exact: "1.000001", nano: 1_000_001, rounded: 2},
		{name: "many records of a fraction round once",
			scale: 6, units: []int64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, price: "0.1", exact: "1.000000", nano: 1_000_000, rounded: 1},
		{name: "a revision down below zero", scale: 1, units: []int64{-1}, price: "0.5", exact: "-0.5", nano: -5, rounded: 0},
		{name: "scale 0 is units", scale: 0, units: []int64{7, 5}, price: "1", exact: "12", nano: 12, rounded: 12},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			total := price.Zero(tt.scale)
			for _, u := range tt.units {
				if err := total.Add(u, price.MustParse(tt.price)); err != nil {
					t.Fatal(err)
				}
			}
			if total.String() != tt.exact || total.Nano() != tt.nano || total.Rounded() != tt.rounded {
				t.Fatalf("spend = %s (%d), rounded %d; want %s (%d), rounded %d", total, total.Nano(), total.Rounded(), tt.exact, tt.nano, tt.rounded)
			}
			if total.Over(tt.rounded) || !total.Over(tt.rounded-1) {
				t.Fatalf("Over(%d) or not Over(%d): a cap must trip once the exact spend passes it", tt.rounded, tt.rounded-1)
			}
		})
	}
}

func TestACapNeverTripsLaterThanExactArithmetic(t *testing.T) {
	// Given a cap of 10 and records of 3.4 each (scale 1),
	p, total := price.MustParse("3.4"), price.Zero(1)
	var tripped []int
	for i := 1; i <= 4; i++ {
		if err := total.Add(1, p); err != nil {
			t.Fatal(err)
		}
		if total.Over(10) {
			tripped = append(tripped, i)
		}
	}
	// then the third record (10.2) trips it, as the exact sum does; a
	// sum rounded down per record (3 + 3 + 3) would have waited for the
	// fourth.
	if len(tripped) == 0 || tripped[0] != 3 {
		t.Fatalf("tripped at records %v, want from the 3rd", tripped)
	}
}

func TestOverflowSaturatesOverEveryCap(t *testing.T) {
	s := price.Scale(6)
	tests := []struct {
		name string
		run  func(*price.Spend) error
	}{
		{name: "a product", run: func(a *price.Spend) error { return a.Add(math.MaxInt64/1000, price.MustParse("1")) }},
		{name: "a sum", run: func(a *price.Spend) error {
			if err := a.Add(math.MaxInt64/2_000_000, price.MustParse("1")); err != nil {
				return err
			}
			return a.Add(math.MaxInt64/2_000_000+1000, price.MustParse("1"))
		}},
		{name: "a saturated bucket", run: func(a *price.Spend) error { return a.Plus(price.FromNano(s, price.MaxNano)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			total := price.Zero(s)
			if err := tt.run(&total); !errors.Is(err, price.ErrOverflow) {
				t.Fatalf("err = %v, want ErrOverflow", err)
			}
			// Then it stays saturated, whatever is taken off it, and is
			// over the largest cap the scale allows.
			_ = total.Add(-1_000_000, price.MustParse("1"))
			if !total.Saturated() || total.Nano() != price.MaxNano || !total.Over(s.MaxCap()) || total.String() != "overflow" {
				t.Fatalf("after overflow: %s (%d), saturated %v", total, total.Nano(), total.Saturated())
			}
		})
	}
	if err := s.CheckCap(s.MaxCap() + 1); !errors.Is(err, price.ErrOverflow) {
		t.Fatalf("CheckCap(MaxCap+1) = %v, want ErrOverflow", err)
	}
	if err := s.CheckCap(s.MaxCap()); err != nil {
		t.Fatalf("CheckCap(MaxCap) = %v", err)
	}
}

func TestParseNanoReadsWhatDynamoDBAdds(t *testing.T) {
	tests := []struct {
		name, text string
		nano       int64
		saturated  bool
		wantErr    error
	}{
		{name: "a total", text: "2502500000", nano: 2_502_500_000},
		{name: "negative", text: "-5", nano: -5},
		{name: "past int64, as 38 digits hold", text: "92233720368547758080", nano: price.MaxNano, saturated: true, wantErr: price.ErrOverflow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := price.ParseNano(6, tt.text)
			if !errors.Is(err, tt.wantErr) || got.Nano() != tt.nano || got.Saturated() != tt.saturated {
				t.Fatalf("ParseNano(%s) = %d (saturated %v), %v", tt.text, got.Nano(), got.Saturated(), err)
			}
		})
	}
	if _, err := price.ParseNano(6, "1.5"); err == nil {
		t.Fatal("ParseNano(1.5) read a fraction of the scale's unit")
	}
}

func TestAPriceFinerThanTheScaleIsRefused(t *testing.T) {
	total := price.Zero(2)
	if err := total.Add(1, price.MustParse("0.001")); !errors.Is(err, price.ErrScale) || total.Nano() != 0 {
		t.Fatalf("Add at 3 decimals to scale 2 = %v (spend %s), want ErrScale and nothing added", err, total)
	}
	if err := total.Plus(price.Zero(3)); !errors.Is(err, price.ErrScale) {
		t.Fatalf("Plus across scales = %v, want ErrScale", err)
	}
	s, _ := price.NewSchedule(price.MustParse("0.001"))
	if fs := fields(s.Check(2)); len(fs) != 1 || fs[0] != "price[0]" {
		t.Fatalf("Check(2) fields = %v, want price[0]", fs)
	}
}

// TestWithoutPricesSpendIsUnits holds that a deployment without prices
// counts exactly as before prices existed: every meter costs 1 at scale
// 0, the stored form is the units, and a cap trips at units > cap.
func TestWithoutPricesSpendIsUnits(t *testing.T) {
	var none *price.Pricing // no prices configured
	p, err := price.ParsePricing("  ")
	if err != nil || p != nil {
		t.Fatalf("ParsePricing(blank) = %v, %v; want no prices", p, err)
	}
	if none.Priced() || none.SpendScale() != 0 || none.Validate() != nil {
		t.Fatal("no prices must be valid, unpriced, at scale 0")
	}
	if err := none.CheckMeters([]price.Meter{{Source: "usage", Name: "units", Unit: "units"}, {Source: "x", Any: true}}); err != nil {
		t.Fatalf("CheckMeters without prices = %v, want nil: the SPEND_UNIT check stays as it was", err)
	}
	s, err := none.For(price.Meter{Source: "usage", Name: "anything"})
	if err != nil {
		t.Fatal(err)
	}
	total := price.Zero(none.SpendScale())
	var units int64
	for i, u := range []int64{1, 7, 1 << 53, 12345} {
		p, err := s.PriceAt(time.Date(2026, 1, 1, i, 0, 0, 0, time.UTC))
		if err != nil || p.String() != "1" {
			t.Fatalf("price = %s, %v; want 1", p, err)
		}
		if err := total.Add(u, p); err != nil {
			t.Fatal(err)
		}
		units += u
		if total.Nano() != units || total.Rounded() != units || total.Over(units) || !total.Over(units-1) {
			t.Fatalf("after %d units: stored %d, rounded %d; want both %d", units, total.Nano(), total.Rounded(), units)
		}
	}
}
