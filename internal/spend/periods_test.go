package spend

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/ddb"
	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/period"
)

// laMonth is the period: a month anchored on the 31st in Los
// Angeles.
func laMonth(t testing.TB, policy BoundaryPolicy) Periods {
	t.Helper()
	p, err := ParsePeriods(period.Config{Period: "month", Anchor: "2026-01-31T00:00:00", TimeZone: "America/Los_Angeles"}, "1h", string(policy))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (f *fixture) periodWorkload(t testing.TB, id string, capUnits, step int64, p Periods) Workload {
	t.Helper()
	w, err := f.s.Workloads.CreateWorkload(context.Background(), NewWorkload{ID: id, Owner: "team-" + id,
		RoutingKey: "rk-" + id, Cap: capUnits, Step: step, Periods: p})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestAWorkloadOfTheEarlierBuildReadsAsALifetimeTotal(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	// Given a workload item as the build before periods wrote it: no
	// period fields at all
	now := ddb.Stamp(f.now)
	f.putRaw(t, f.s.Workloads.workloads, map[string]types.AttributeValue{
		"pk": str(WorkloadPK("w-old")), "sk": str(skWorkload), "gsi1pk": str(workloadsPartition), "gsi1sk": str("w-old"),
		"id": str("w-old"), "owner": str("team-old"), "routing_key": str("rk-old"), "cap": num("10"), "step": num("0"),
		"status": str("active"), "hold": &types.AttributeValueMemberBOOL{Value: false}, "total": num("4"),
		"cap_epoch": num("0"), "esc_level": num("0"), "created_at": str(now), "updated_at": str(now)})
	f.putRaw(t, f.s.Workloads.workloads, map[string]types.AttributeValue{
		"pk": str(aliasPK("w-old")), "sk": str(skAlias), "gsi1pk": str(aliasesPK("w-old")), "gsi1sk": str("w-old"),
		"ref": str("w-old"), "workload_id": str("w-old"), "created_at": str(now)})

	// When it is read, and records a year apart are applied to it
	w, err := f.s.Workloads.Get(context.Background(), "w-old")
	if err != nil {
		t.Fatal(err)
	}
	if !w.Periods.Lifetime() || w.PeriodID != "" {
		t.Fatalf("periods = %+v, period ID %q; want the lifetime total", w.Periods, w.PeriodID)
	}
	early := usage("rec-old-1", "w-old", 3)
	early.OccurredAt = observed.AddDate(-1, 0, 0)
	f.apply(t, early)
	res := f.apply(t, usage("rec-old-2", "w-old", 4))

	// Then every record counts in the one lifetime total, and the cap
	// trips on it as before
	if res.Total != 11 {
		t.Fatalf("total = %d, want 11 (4 + 3 + 4)", res.Total)
	}
	if len(res.Decisions) != 1 || res.Decisions[0].Action != ActionPause {
		t.Fatalf("decisions = %+v, want one pause", res.Decisions)
	}
	raw := f.getRaw(t, f.s.Workloads.workloads, workloadKey("w-old"))
	for _, name := range []string{"period", "period_id", "anchor", "time_zone"} {
		if _, ok := raw[name]; ok {
			t.Errorf("the lifetime workload's item gained %q", name)
		}
	}
}

func TestCreateWorkloadStoresItsPeriod(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	// Given the fixture's clock, 2026-11-30T03:18Z (Nov 29 in Los Angeles)
	// When a workload is created with a month anchored on the 31st in Los
	// Angeles, grace 1h, staying paused at the boundary
	created := f.periodWorkload(t, "w-month", 1000, 0, laMonth(t, AtBoundaryStay))

	// Then it reads back with its period, and its current period is the
	// one that holds now: Oct 31 to Nov 30, Los Angeles midnight
	w, err := f.s.Workloads.Get(context.Background(), "w-month")
	if err != nil {
		t.Fatal(err)
	}
	if !w.Periods.Recurrence.Equal(created.Periods.Recurrence) || w.Periods.Grace != time.Hour || w.Periods.AtBoundary != AtBoundaryStay {
		t.Fatalf("periods = %+v", w.Periods)
	}
	p, err := w.Period()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.String(), "2026-10-31T00:00:00-07:00/2026-11-30T00:00:00-08:00"; got != want {
		t.Fatalf("current period = %s, want %s", got, want)
	}
}

func TestCreateWorkloadRefusesAPeriodItsSumsSourceStraddles(t *testing.T) {
	t.Parallel()
	env := localaws.StartForTest(t)
	f := newSumsFixture(t, env, env.DynamoDB)
	// Given the sums sources of the tests, one of them with OpenAI's day
	// buckets in UTC
	// When a workload is created with a Los Angeles month
	_, err := f.s.Workloads.CreateWorkload(context.Background(), NewWorkload{ID: "w-la", Owner: "o", RoutingKey: "rk",
		Cap: 10, Periods: laMonth(t, "")})

	// Then it is refused, naming the source whose day buckets straddle
	// the boundary
	var se *SourceStraddleError
	if !errors.As(err, &se) || !errors.Is(err, ErrInvalidWorkload) || !errors.Is(err, period.ErrStraddle) {
		t.Fatalf("err = %v, want a *SourceStraddleError", err)
	}
	if se.Source != "openai-poll" || se.Err.Width != 24*time.Hour {
		t.Fatalf("refused for source %s width %s, want openai-poll's 24h", se.Source, se.Err.Width)
	}
	// And a UTC month anchored at midnight fits every source
	utc, err := ParsePeriods(period.Config{Period: "month", Anchor: "2026-01-31", TimeZone: "UTC"}, "", "")
	if err != nil {
		t.Fatal(err)
	}
	f.periodWorkload(t, "w-utc", 10, 0, utc)
}

func TestParsePeriodsRefusesEveryBadField(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name              string
		c                 period.Config
		grace, atBoundary string
	}{
		{name: "unknown interval", c: period.Config{Period: "fortnight", Anchor: "2026-01-31"}},
		{name: "missing anchor", c: period.Config{Period: "month"}},
		{name: "bad zone", c: period.Config{Period: "month", Anchor: "2026-01-31", TimeZone: "Mars/Olympus"}},
		{name: "bad grace", c: period.Config{Period: "month", Anchor: "2026-01-31"}, grace: "-1h"},
		{name: "bad policy", c: period.Config{Period: "month", Anchor: "2026-01-31"}, atBoundary: "pause"},
		{name: "grace without a period", grace: "1h"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ParsePeriods(tc.c, tc.grace, tc.atBoundary); !errors.Is(err, ErrInvalidWorkload) {
				t.Fatalf("err = %v, want ErrInvalidWorkload", err)
			}
		})
	}
}
