package period_test

import (
	"fmt"
	"time"

	"github.com/hookline/hookline/internal/period"
)

func Example() {
	rec, err := period.Config{Period: "month", Anchor: "2026-01-31T00:00:00", TimeZone: "America/Los_Angeles"}.Recurrence()
	if err != nil {
		fmt.Println(err)
		return
	}
	p, _ := rec.PeriodAt(time.Date(2026, 3, 15, 12, 0, 0, 0, time.UTC))
	fmt.Println(p)
	fmt.Println(p.ID())
	fmt.Println(period.Close(p, time.Hour).Format(time.RFC3339))
	next, _ := rec.Next(p)
	fmt.Println(next)
	fmt.Println(period.FitsBuckets(rec, 24*time.Hour, time.UTC) != nil, period.FitsBuckets(rec, time.Hour, time.UTC))
	// Output:
	// 2026-02-28T00:00:00-08:00/2026-03-31T00:00:00-07:00
	// 2026-02-28T08:00:00Z/2026-03-31T07:00:00Z
	// 2026-03-31T01:00:00-07:00
	// 2026-03-31T00:00:00-07:00/2026-04-30T00:00:00-07:00
	// true <nil>
}
