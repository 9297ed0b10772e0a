package period

import (
	"encoding/json"
	"errors"
	"time"
)

// Config is a recurrence as the CLI's flags and a workload item carry
// it, all strings:
//
//	--period month --anchor 2026-01-31T00:00:00 --time-zone America/Los_Angeles
//	{"period":"month","anchor":"2026-01-31T08:00:00Z","time_zone":"America/Los_Angeles"}
//
// [Config.Recurrence] reads either form; [Recurrence.Config] writes the
// stored one (the anchor in RFC 3339 UTC), and the two round-trip. A
// workload stored before periods existed has an empty Config, which is
// [None].
type Config struct {
	// Period is an [Interval] name; empty is none.
	Period string `json:"period,omitempty"`
	// Anchor is read by [ParseAnchor]: a wall time in TimeZone
	// ("2026-01-31T00:00:00", or a date for its midnight) or an RFC 3339
	// instant. Required unless Period is none, and refused with none.
	Anchor string `json:"anchor,omitempty"`
	// TimeZone is an IANA zone name ([ParseZone]); empty is UTC. Refused
	// with none.
	TimeZone string `json:"time_zone,omitempty"`
}

// Recurrence reads c, reporting every bad field at once (each a
// [*FieldError], joined).
func (c Config) Recurrence() (Recurrence, error) {
	interval, perr := ParseInterval(c.Period)
	if perr == nil && interval == None {
		var errs []error
		if c.Anchor != "" {
			errs = append(errs, &FieldError{Field: "anchor", Value: c.Anchor, Reason: "given with period none"})
		}
		if c.TimeZone != "" {
			errs = append(errs, &FieldError{Field: "time_zone", Value: c.TimeZone, Reason: "given with period none"})
		}
		return Recurrence{}, errors.Join(errs...)
	}
	name := c.TimeZone
	if name == "" {
		name = "UTC"
	}
	zone, zerr := ParseZone(name)
	anchorZone := zone
	if zerr != nil {
		anchorZone = time.UTC // still report a malformed anchor
	}
	anchor, aerr := ParseAnchor(c.Anchor, anchorZone)
	if err := errors.Join(perr, zerr, aerr); err != nil {
		return Recurrence{}, err
	}
	return New(interval, anchor, zone)
}

// Config returns r's stored form: the interval's name, the anchor in
// RFC 3339 UTC and the zone's name. [None] is {"period":"none"}.
func (r Recurrence) Config() Config {
	if r.Interval == None {
		return Config{Period: None.String()}
	}
	return Config{Period: r.Interval.String(), Anchor: r.Anchor.UTC().Format(time.RFC3339), TimeZone: zoneName(r.Zone)}
}

// MarshalJSON writes r's stored [Config].
func (r Recurrence) MarshalJSON() ([]byte, error) { return json.Marshal(r.Config()) }

// UnmarshalJSON reads a [Config], as [Config.Recurrence] does.
func (r *Recurrence) UnmarshalJSON(b []byte) error {
	var c Config
	if err := json.Unmarshal(b, &c); err != nil {
		return err
	}
	v, err := c.Recurrence()
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// ParseZone loads an IANA zone by name ("America/Los_Angeles", "UTC")
// from the embedded zoneinfo. It refuses the empty name and "Local",
// which mean the machine's zone and differ between a laptop and Lambda.
func ParseZone(name string) (*time.Location, error) {
	return zoneByName(name)
}

func zoneByName(name string) (*time.Location, error) {
	switch name {
	case "":
		return nil, &FieldError{Field: "time_zone", Reason: "required"}
	case "Local":
		return nil, &FieldError{Field: "time_zone", Value: name, Reason: "the machine's zone; name an IANA zone such as America/Los_Angeles or UTC"}
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, &FieldError{Field: "time_zone", Value: name, Reason: "not an IANA time zone"}
	}
	return loc, nil
}

func zoneName(loc *time.Location) string {
	if loc == nil {
		return ""
	}
	return loc.String()
}

// civilLayout is a wall time without an offset, as --anchor takes it.
const (
	civilLayout = "2006-01-02T15:04:05"
	dateLayout  = "2006-01-02"
)

// ParseAnchor reads an anchor for zone: a wall time in zone without an
// offset ("2026-01-31T00:00:00"), a date meaning its midnight
// ("2026-01-31"), or an RFC 3339 instant ("2026-01-31T08:00:00Z",
// "2026-01-31T00:00:00-08:00"), which is taken as the wall time it shows
// in zone. Whole seconds only. A wall time zone skips (inside the
// spring-forward gap) is refused; one it shows twice is its first
// instant.
func ParseAnchor(s string, zone *time.Location) (time.Time, error) {
	if s == "" {
		return time.Time{}, &FieldError{Field: "anchor", Reason: "required"}
	}
	if zone == nil {
		return time.Time{}, &FieldError{Field: "time_zone", Reason: "required"}
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		if t.Nanosecond() != 0 {
			return time.Time{}, &FieldError{Field: "anchor", Value: s, Reason: "has fractions of a second"}
		}
		return t.In(zone), nil
	}
	wall, err := time.Parse(civilLayout, s)
	if err != nil {
		if wall, err = time.Parse(dateLayout, s); err != nil {
			return time.Time{}, &FieldError{Field: "anchor", Value: s, Reason: "want a wall time 2006-01-02T15:04:05 in the time zone, a date, or RFC 3339 with an offset"}
		}
	}
	t := resolve(wall, zone)
	if !wallOf(t).Equal(wall) {
		return time.Time{}, &FieldError{Field: "anchor", Value: s, Reason: "does not exist in " + zone.String() + " (the clocks skip it); choose another time of day"}
	}
	return t, nil
}

// MaxGrace is the longest grace [ParseGrace] takes: 35 days, the oldest
// late usage a provider accepts (Stripe's meter events).
const MaxGrace = 35 * 24 * time.Hour

// ParseGrace reads a period's grace, the time from its end to its close
// ([Close]), as a Go duration ("1h", "90m"). Empty is zero. It refuses
// a negative grace and one longer than [MaxGrace].
func ParseGrace(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return 0, &FieldError{Field: "grace", Value: s, Reason: "not a duration such as 1h"}
	case d < 0:
		return 0, &FieldError{Field: "grace", Value: s, Reason: "negative"}
	case d > MaxGrace:
		return 0, &FieldError{Field: "grace", Value: s, Reason: "longer than 840h (35 days)"}
	}
	return d, nil
}
