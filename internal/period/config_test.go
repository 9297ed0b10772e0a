package period_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/period"
)

func TestConfigReadsFlagsAndStoredFormsAlike(t *testing.T) {
	stored := period.Config{Period: "month", Anchor: "2026-01-31T08:00:00Z", TimeZone: "America/Los_Angeles"}
	tests := []struct {
		name   string
		config period.Config
		want   period.Config // the stored form
	}{
		{name: "flags: wall time in the zone", config: period.Config{Period: "month", Anchor: "2026-01-31T00:00:00", TimeZone: "America/Los_Angeles"}, want: stored},
		{name: "flags: a date is its midnight", config: period.Config{Period: "month", Anchor: "2026-01-31", TimeZone: "America/Los_Angeles"}, want: stored},
		{name: "flags: RFC 3339 with an offset", config: period.Config{Period: "month", Anchor: "2026-01-31T00:00:00-08:00", TimeZone: "America/Los_Angeles"}, want: stored},
		{name: "stored form", config: stored, want: stored},
		{name: "empty time zone is UTC", config: period.Config{Period: "week", Anchor: "2026-01-05T09:00:00"},
			want: period.Config{Period: "week", Anchor: "2026-01-05T09:00:00Z", TimeZone: "UTC"}},
		{name: "an RFC 3339 instant is converted into the zone", config: period.Config{Period: "day", Anchor: "2026-06-01T00:00:00Z", TimeZone: "Asia/Kathmandu"},
			want: period.Config{Period: "day", Anchor: "2026-06-01T00:00:00Z", TimeZone: "Asia/Kathmandu"}},
		{name: "a wall time shown twice is the first", config: period.Config{Period: "day", Anchor: "2026-11-01T01:30:00", TimeZone: "America/Los_Angeles"},
			want: period.Config{Period: "day", Anchor: "2026-11-01T08:30:00Z", TimeZone: "America/Los_Angeles"}},
		{name: "the second instant of a wall time shown twice becomes the first", config: period.Config{Period: "day", Anchor: "2026-11-01T01:30:00-08:00", TimeZone: "America/Los_Angeles"},
			want: period.Config{Period: "day", Anchor: "2026-11-01T08:30:00Z", TimeZone: "America/Los_Angeles"}},
		{name: "no fields is none (the earlier build)", config: period.Config{}, want: period.Config{Period: "none"}},
		{name: "none", config: period.Config{Period: "none"}, want: period.Config{Period: "none"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Given a configuration as the CLI or a workload item holds it
			r, err := tt.config.Recurrence()
			if err != nil {
				t.Fatal(err)
			}
			// Then its stored form is canonical
			if got := r.Config(); got != tt.want {
				t.Fatalf("Config() = %+v, want %+v", got, tt.want)
			}
			// And the stored form reads back to the same recurrence, twice
			back, err := r.Config().Recurrence()
			if err != nil || !back.Equal(r) || back.Config() != tt.want {
				t.Fatalf("round trip = %s, %v; want %s", back, err, r)
			}
			// And JSON holds the stored form and reads back
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			var fromJSON period.Recurrence
			if err := json.Unmarshal(b, &fromJSON); err != nil || !fromJSON.Equal(r) {
				t.Fatalf("JSON %s read back as %s, %v", b, fromJSON, err)
			}
			var c period.Config
			if err := json.Unmarshal(b, &c); err != nil || c != tt.want {
				t.Fatalf("JSON %s is not the stored form %+v", b, tt.want)
			}
		})
	}
}

func TestStoredJSONFieldNames(t *testing.T) {
	r := rec(t, "month", "2026-01-31T00:00:00", "America/Los_Angeles")
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"period":"month","anchor":"2026-01-31T08:00:00Z","time_zone":"America/Los_Angeles"}`; string(b) != want {
		t.Fatalf("JSON = %s, want %s", b, want)
	}
}

func TestConfigRefusesBadFieldsNamingThem(t *testing.T) {
	tests := []struct {
		name       string
		config     period.Config
		wantFields []string
	}{
		{name: "unknown period", config: period.Config{Period: "monthly", Anchor: "2026-01-31"}, wantFields: []string{"period"}},
		{name: "unknown zone", config: period.Config{Period: "month", Anchor: "2026-01-31", TimeZone: "Mars/Olympus_Mons"}, wantFields: []string{"time_zone"}},
		{name: "the machine's zone", config: period.Config{Period: "month", Anchor: "2026-01-31", TimeZone: "Local"}, wantFields: []string{"time_zone"}},
		{name: "no anchor", config: period.Config{Period: "month", TimeZone: "UTC"}, wantFields: []string{"anchor"}},
		{name: "anchor not a time", config: period.Config{Period: "month", Anchor: "31/01/2026"}, wantFields: []string{"anchor"}},
		{name: "anchor with fractions of a second", config: period.Config{Period: "month", Anchor: "2026-01-31T00:00:00.5Z"}, wantFields: []string{"anchor"}},
		{name: "anchor in the spring forward gap", config: period.Config{Period: "day", Anchor: "2026-03-08T02:30:00", TimeZone: "America/Los_Angeles"}, wantFields: []string{"anchor"}},
		{name: "anchor in year 9999", config: period.Config{Period: "day", Anchor: "9999-06-01T00:00:00"}, wantFields: []string{"anchor"}},
		{name: "anchor given with none", config: period.Config{Period: "none", Anchor: "2026-01-31"}, wantFields: []string{"anchor"}},
		{name: "every bad field at once", config: period.Config{Period: "fortnight", Anchor: "soon", TimeZone: "Nowhere/Land"}, wantFields: []string{"period", "time_zone", "anchor"}},
		{name: "anchor and zone given with none", config: period.Config{Period: "none", Anchor: "2026-01-31", TimeZone: "UTC"}, wantFields: []string{"anchor", "time_zone"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.config.Recurrence()
			if !period.IsBadConfig(err) {
				t.Fatalf("Recurrence() = %v, want a bad config error", err)
			}
			for _, f := range tt.wantFields {
				if !strings.Contains(err.Error(), "period: "+f+" ") {
					t.Errorf("error %q does not name %s", err, f)
				}
			}
			var fe *period.FieldError
			if !errors.As(err, &fe) {
				t.Errorf("error %v is not a *FieldError", err)
			}
		})
	}
}

func TestIntervalText(t *testing.T) {
	for _, i := range []period.Interval{period.None, period.Day, period.Week, period.Month, period.Year} {
		b, err := json.Marshal(i)
		if err != nil {
			t.Fatal(err)
		}
		var back period.Interval
		if err := json.Unmarshal(b, &back); err != nil || back != i {
			t.Fatalf("%s: JSON %s read back as %s, %v", i, b, back, err)
		}
	}
	var i period.Interval
	if err := json.Unmarshal([]byte(`""`), &i); err != nil || i != period.None {
		t.Errorf(`"" reads as %s, %v; want none`, i, err)
	}
	if err := json.Unmarshal([]byte(`"weekly"`), &i); !period.IsBadConfig(err) {
		t.Errorf(`"weekly" reads as %v, want a bad config error`, err)
	}
	if _, err := json.Marshal(period.Interval(9)); err == nil {
		t.Error("Interval(9) marshals")
	}
}

func TestParseGrace(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{in: "", want: 0},
		{in: "1h", want: time.Hour},
		{in: "90m", want: 90 * time.Minute},
		{in: "840h", want: period.MaxGrace},
		{in: "841h", wantErr: true},
		{in: "-1h", wantErr: true},
		{in: "an hour", wantErr: true},
	}
	for _, tt := range tests {
		got, err := period.ParseGrace(tt.in)
		if tt.wantErr {
			if !period.IsBadConfig(err) || !strings.Contains(err.Error(), "grace") {
				t.Errorf("ParseGrace(%q) = %v, want a bad grace error", tt.in, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseGrace(%q) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
}
