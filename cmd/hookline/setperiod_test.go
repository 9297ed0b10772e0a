package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/period"
	"github.com/hookline/hookline/internal/spend"
)

// TestWorkloadSetPeriod: set-period changes a workload's period at the end
// of its current period and says so; a lifetime total, a change to none
// and a bad zone are refused as usage errors.
func TestWorkloadSetPeriod(t *testing.T) {
	cliEnv(t)
	la, err := spend.ParsePeriods(period.Config{Period: "month", Anchor: "2026-01-31T00:00:00", TimeZone: "America/Los_Angeles"}, "", "")
	if err != nil {
		t.Fatal(err)
	}
	// Given a workload of a Los Angeles month, and one of a lifetime total
	for _, args := range [][]string{
		{"workload", "create", "w-month", "--owner", "o", "--routing-key", "rk", "--cap", "1000",
			"--period", "month", "--anchor", "2026-01-31T00:00:00", "--time-zone", "America/Los_Angeles"},
		{"workload", "create", "w-lifetime", "--owner", "o", "--routing-key", "rk", "--cap", "1000"},
	} {
		if code, out := run(t, args...); code != exitOK {
			t.Fatalf("%v: exit %d\n%s", args, code, out)
		}
	}
	cur, err := la.At(time.Now())
	if err != nil {
		t.Fatal(err)
	}

	// When its period is changed to a New York month on the 1st
	code, out := run(t, "workload", "set-period", "w-month", "--period", "month", "--anchor", "2027-01-01T00:00:00",
		"--time-zone", "America/New_York")

	// Then the change takes effect at the end of the current period, and
	// the command says when and what holds until then
	want := "set-period: workload w-month changes to month anchored 2027-01-01T00:00:00 America/New_York at " +
		cur.End.Format(time.RFC3339) + ", the end of its current period " + cur.String() +
		"; until then month anchored 2026-01-31T00:00:00 America/Los_Angeles\n"
	if code != exitOK || out != want {
		t.Fatalf("set-period: exit %d\n got %q\nwant %q", code, out, want)
	}
	// and --json says the same
	code, out = run(t, "workload", "set-period", "w-month", "--period", "month", "--anchor", "2027-01-01T00:00:00",
		"--time-zone", "America/New_York", "--json")
	var got map[string]string
	if err := json.Unmarshal([]byte(out), &got); code != exitOK || err != nil || got["from"] != cur.End.Format(time.RFC3339) ||
		got["period"] != "month" || got["time_zone"] != "America/New_York" {
		t.Fatalf("set-period --json: exit %d %v\n%s", code, err, out)
	}

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{name: "a lifetime total", args: []string{"w-lifetime", "--period", "month", "--anchor", "2027-01-01T00:00:00"},
			want: "no boundary to change at"},
		{name: "to none", args: []string{"w-month", "--period", "none"}, want: "none has no boundaries"},
		{name: "a bad zone", args: []string{"w-month", "--period", "month", "--anchor", "2027-01-01T00:00:00", "--time-zone", "Mars/Olympus"},
			want: "Mars/Olympus"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// given the workload, when set-period is refused, then it is a
			// usage error that says why
			var errs strings.Builder
			old := stderr
			stderr = &errs
			defer func() { stderr = old }()
			if code, out := run(t, append([]string{"workload", "set-period"}, tc.args...)...); code != exitUsage || !strings.Contains(errs.String(), tc.want) {
				t.Fatalf("exit %d, want %d with %q\nstdout %s\nstderr %s", code, exitUsage, tc.want, out, errs.String())
			}
		})
	}
}
