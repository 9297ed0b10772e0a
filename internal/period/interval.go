package period

import (
	"fmt"
	"strings"
)

// Interval is the length of a period: [None] (one period for the whole
// lifetime), [Day], [Week], [Month] or [Year]. The zero value is None,
// so a workload stored before periods existed reads as None.
type Interval uint8

// The intervals.
const (
	None Interval = iota
	Day
	Week
	Month
	Year
)

var intervalNames = [...]string{None: "none", Day: "day", Week: "week", Month: "month", Year: "year"}

// ParseInterval reads an interval's name: "none", "day", "week", "month"
// or "year". The empty string is None, the reading of a workload stored
// before periods existed. Anything else is an [ErrBadConfig].
func ParseInterval(s string) (Interval, error) {
	if s == "" {
		return None, nil
	}
	for i, n := range intervalNames {
		if s == n {
			return Interval(i), nil
		}
	}
	return None, &FieldError{Field: "period", Value: s, Reason: "want one of " + strings.Join(intervalNames[:], ", ")}
}

// String returns the interval's name as [ParseInterval] reads it.
func (i Interval) String() string {
	if i.valid() {
		return intervalNames[i]
	}
	return fmt.Sprintf("Interval(%d)", uint8(i))
}

func (i Interval) valid() bool { return int(i) < len(intervalNames) }

// MarshalText writes the interval's name, so JSON holds "month".
func (i Interval) MarshalText() ([]byte, error) {
	if !i.valid() {
		return nil, &FieldError{Field: "period", Value: i.String(), Reason: "not an interval"}
	}
	return []byte(intervalNames[i]), nil
}

// UnmarshalText reads what [ParseInterval] reads.
func (i *Interval) UnmarshalText(b []byte) error {
	v, err := ParseInterval(string(b))
	if err != nil {
		return err
	}
	*i = v
	return nil
}
