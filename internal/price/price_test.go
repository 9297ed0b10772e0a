package price_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/price"
)

func TestParseIsExact(t *testing.T) {
	tests := []struct {
		name, text, want string
		decimals         int
		wantErr          string
	}{
		{name: "micro-dollars a token", text: "2.5", want: "2.5", decimals: 1},
		{name: "dollars a call", text: "0.000004", want: "0.000004", decimals: 6},
		{name: "trailing zeros are no decimals", text: "2.50", want: "2.5", decimals: 1},
		{name: "an exponent", text: "25e-1", want: "2.5", decimals: 1},
		{name: "a positive exponent", text: "25E2", want: "2500", decimals: 0},
		{name: "an integer", text: "3", want: "3", decimals: 0},
		{name: "free", text: "0", want: "0", decimals: 0},
		{name: "twelve decimals", text: "0.000000000001", want: "0.000000000001", decimals: 12},
		{name: "thirteen decimals", text: "0.0000000000001", wantErr: "has 13 decimals; at most 12"},
		{name: "negative", text: "-1", wantErr: "must not be negative"},
		{name: "negative zero", text: "-0", wantErr: "must not be negative"},
		{name: "not a number", text: "two", wantErr: "want a decimal number"},
		{name: "NaN", text: "NaN", wantErr: "want a finite number"},
		{name: "infinite", text: "Infinity", wantErr: "want a finite number"},
		{name: "a fraction", text: "1/3", wantErr: "want a decimal number"},
		{name: "empty", text: "", wantErr: "want a decimal number of at most"},
		{name: "beyond int64", text: "92233720368547758080", wantErr: "too large"},
		{name: "a large exponent", text: "1e99", wantErr: "too large"},
		{name: "an exponent past any decimal", text: "1e999999", wantErr: "want a decimal number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Given a price's text, when it is parsed,
			p, err := price.Parse(tt.text)
			// then it is exact, or refused as a field error saying why.
			if tt.wantErr != "" {
				var fe *price.FieldError
				if !errors.As(err, &fe) || !price.IsBadConfig(err) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse(%q) = %v, %v; want a *FieldError containing %q", tt.text, p, err, tt.wantErr)
				}
				return
			}
			if err != nil || p.String() != tt.want || p.Decimals() != tt.decimals {
				t.Fatalf("Parse(%q) = %s (%d decimals), %v; want %s (%d)", tt.text, p, p.Decimals(), err, tt.want, tt.decimals)
			}
		})
	}
}

func TestPriceAtHoldsFromEachChange(t *testing.T) {
	march, april := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	s, err := price.ParseSchedule([]byte(`[{"price": "2.5", "from": "2026-03-01T00:00:00Z"}, {"price": 2, "from": "2026-04-01T00:00:00Z"}]`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		at      time.Time
		want    string
		noPrice bool
	}{
		{name: "before the first price", at: march.Add(-time.Nanosecond), noPrice: true},
		{name: "at the first price", at: march, want: "2.5"},
		{name: "just before the change", at: april.Add(-time.Nanosecond), want: "2.5"},
		{name: "at the change", at: april, want: "2"},
		{name: "in another zone, at the change", at: april.In(time.FixedZone("PDT", -7*3600)), want: "2"},
		{name: "long after", at: april.AddDate(5, 0, 0), want: "2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := s.PriceAt(tt.at)
			if tt.noPrice {
				if !errors.Is(err, price.ErrNoPrice) {
					t.Fatalf("PriceAt(%s) = %s, %v; want ErrNoPrice", tt.at, p, err)
				}
				return
			}
			if err != nil || p.String() != tt.want {
				t.Fatalf("PriceAt(%s) = %s, %v; want %s", tt.at, p, err, tt.want)
			}
		})
	}
	if _, err := (price.Schedule{}).PriceAt(march); !errors.Is(err, price.ErrNoPrice) {
		t.Fatalf("the zero schedule's price = %v, want ErrNoPrice", err)
	}
}

func TestParseScheduleNamesEveryBadField(t *testing.T) {
	tests := []struct {
		name, text string
		want       []string // fields
	}{
		{name: "one price as a string", text: `"2.5"`},
		{name: "one price as a number", text: `2.5`},
		{name: "a list", text: `[{"price": "1"}, {"price": "2", "from": "2026-01-01T00:00:00Z"}]`},
		{name: "empty list", text: `[]`, want: []string{"price"}},
		{name: "a later price without from", text: `[{"price": "1"}, {"price": "2"}]`, want: []string{"price[1].from"}},
		{name: "out of order", text: `[{"price": "1", "from": "2026-02-01T00:00:00Z"}, {"price": "2", "from": "2026-01-01T00:00:00Z"}]`,
			want: []string{"price[1].from"}},
		{name: "the same instant twice", text: `[{"price": "1", "from": "2026-02-01T00:00:00Z"}, {"price": "2", "from": "2026-02-01T00:00:00Z"}]`,
			want: []string{"price[1].from"}},
		{name: "bad price and bad from", text: `[{"price": "-1"}, {"price": "2", "from": "March"}]`,
			want: []string{"price[0].price", "price[1].from"}},
		{name: "an unknown member", text: `[{"price": "1", "since": "2026-01-01T00:00:00Z"}]`, want: []string{"price"}},
		{name: "an object", text: `{"price": "1"}`, want: []string{"price"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := price.ParseSchedule([]byte(tt.text))
			if got := fields(err); strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("ParseSchedule(%s) = %v; want fields %v", tt.text, err, tt.want)
			}
		})
	}
}

// fields are the fields of every *price.FieldError in err.
func fields(err error) []string {
	if err == nil {
		return nil
	}
	var out []string
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		var fe *price.FieldError
		if errors.As(e, &fe) {
			out = append(out, fe.Field)
		} else {
			out = append(out, "not a field error: "+e.Error())
		}
	}
	return out
}

func TestScheduleJSONRoundTrips(t *testing.T) {
	text := `[{"price":"2.5"},{"price":"0.000004","from":"2026-04-01T00:00:00Z"}]`
	var s price.Schedule
	if err := json.Unmarshal([]byte(text), &s); err != nil {
		t.Fatal(err)
	}
	for range 2 { // written and read again, twice: idempotent
		b, err := json.Marshal(s)
		if err != nil || string(b) != text {
			t.Fatalf("Marshal = %s, %v; want %s", b, err, text)
		}
		var again price.Schedule
		if err := json.Unmarshal(b, &again); err != nil || !again.Equal(s) {
			t.Fatalf("read back %v, %v; want %v", again.Prices(), err, s.Prices())
		}
		s = again
	}
}
