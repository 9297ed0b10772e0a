package spend

import (
	"testing"
	"time"
)

func TestRunScheduleTicks(t *testing.T) {
	next := time.Date(2026, 12, 1, 19, 10, 0, 0, time.UTC)
	rs := RunSchedule{NextRun: next, Every: 5 * time.Minute}
	tests := []struct {
		name string
		at   time.Time
		want time.Time
	}{
		{name: "before the next run", at: next.Add(-2 * time.Minute), want: next},
		{name: "runs earlier than the next", at: next.Add(-7 * time.Minute), want: next.Add(-5 * time.Minute)},
		{name: "on a run", at: next.Add(10 * time.Minute), want: next.Add(10 * time.Minute)},
		{name: "between runs after it", at: next.Add(11 * time.Minute), want: next.Add(15 * time.Minute)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := rs.tickAtOrAfter(tc.at); !got.Equal(tc.want) {
				t.Errorf("tickAtOrAfter(%s) = %s, want %s", tc.at, got, tc.want)
			}
		})
	}
	if got := (RunSchedule{NextRun: next}).tickAtOrAfter(next.Add(time.Hour)); !got.Equal(next) {
		t.Errorf("without a rate = %s, want the next run", got)
	}
}
