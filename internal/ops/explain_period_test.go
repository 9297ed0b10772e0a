package ops

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/period"
	"github.com/hookline/hookline/internal/spend"
)

func TestRunbookShowsTheCurrentAndPreviousPeriod(t *testing.T) {
	la, err := time.LoadLocation("America/Los_Angeles")
	if err != nil {
		t.Fatal(err)
	}
	nov := period.Period{Start: time.Date(2026, 10, 31, 0, 0, 0, 0, la), End: time.Date(2026, 11, 30, 0, 0, 0, 0, la)}
	dec := period.Period{Start: nov.End, End: time.Date(2026, 12, 31, 0, 0, 0, 0, la)}
	paged := time.Date(2026, 11, 30, 9, 30, 0, 0, time.UTC)
	// Given a workload's explanation with December current and November
	// closed with late usage paged
	x := spend.Explanation{Workload: spend.Workload{ID: "w-7", Status: spend.StatusActive, Cap: 10, Total: 3},
		Period: &spend.PeriodView{Period: dec, Close: dec.End.Add(time.Hour), Total: 3, Cap: 10},
		PreviousPeriod: &spend.PeriodView{Period: nov, Close: nov.End.Add(time.Hour), Total: 49, Cap: 10,
			LateUnits: 42, LatePagedAt: paged}}

	// When its runbook is written
	var buf bytes.Buffer
	if err := NewRunbook(x, paged).WriteText(&buf); err != nil {
		t.Fatal(err)
	}

	// Then both periods show, with totals, caps, closes and late usage
	for _, want := range []string{
		"period           2026-11-30T00:00:00-08:00/2026-12-31T00:00:00-08:00  total 3 of cap 10, closes 2026-12-31T09:00:00Z, no late usage",
		"previous period  2026-10-31T00:00:00-07:00/2026-11-30T00:00:00-08:00  total 49 of cap 10, closed 2026-11-30T09:00:00Z, late usage 42 units (paged 2026-11-30T09:30:00Z)",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("runbook lacks\n%s\n---\n%s", want, buf.String())
		}
	}
}

func TestRunbookSaysAPeriodChangeWasAnOperators(t *testing.T) {
	at := time.Date(2026, 11, 30, 3, 18, 0, 0, time.UTC)
	// Given a workload whose latest decision is a change of period
	line := "spend period change workload=w-7 to=month anchored 2027-01-01T00:00:00 America/New_York from=2026-11-30T00:00:00-08:00 was=month anchored 2026-01-31T00:00:00 America/Los_Angeles"
	x := spend.Explanation{Workload: spend.Workload{ID: "w-7", Status: spend.StatusActive, Cap: 10, Total: 3},
		Decisions: []spend.Decision{{WorkloadID: "w-7", Action: spend.ActionSetPeriod, DecidedAt: at, Line: line}}}

	// When its runbook is written
	var buf bytes.Buffer
	if err := NewRunbook(x, at).WriteText(&buf); err != nil {
		t.Fatal(err)
	}

	// Then the last action is the change, caused by an operator, not a
	// record whose entry is missing
	for _, want := range []string{
		"set_period at 2026-11-30T03:18:00Z: " + line,
		"an operator's change of period (workload set-period), in force from the end of the period it was made in",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("runbook lacks\n%s\n---\n%s", want, buf.String())
		}
	}
}
