// Package period is hookline's calendar: it says which billing period
// holds an instant, when that period ends and closes, and whether a
// provider's sums buckets fit the periods. It is the only place in
// hookline that does calendar arithmetic; spend, the reconciler, the
// alerts and explain call it and never add months or days themselves.
//
// A [Recurrence] is an [Interval] ([None], [Day], [Week], [Month],
// [Year]), an anchor and an IANA zone. A [Period] holds its Start and
// excludes its End. [None] is the lifetime total of the earlier build:
// one period from the beginning of time to forever ([Lifetime]).
//
//	rec, err := period.Config{Period: "month", Anchor: "2026-01-31T00:00:00", TimeZone: "America/Los_Angeles"}.Recurrence()
//	if err != nil {
//		return err // a *period.FieldError naming the field
//	}
//	p, err := rec.PeriodAt(record.Occurred) // 2026-02-28T00:00:00-08:00/2026-03-31T00:00:00-07:00
//	key := p.ID()                           // 2026-02-28T08:00:00Z/2026-03-31T07:00:00Z
//	closed := now.After(period.Close(p, grace))
//
// # Boundaries
//
// Boundary n is the anchor's wall date and time in the zone moved by n
// intervals, computed from the anchor each time so nothing drifts. A
// month anchored on the 29th to 31st falls on the last day of a shorter
// month and returns to the anchor's day after it (Jan 31, Feb 28 or 29,
// Mar 31, Apr 30), as Stripe's billing cycle anchor does; a year anchored
// on Feb 29 falls on Feb 28 in a common year. A week keeps the anchor's
// weekday. The anchor's time of day, to the second, is part of it.
//
// Periods follow the zone's wall clock, so a day across a daylight
// saving change is 23 or 25 hours (America/Los_Angeles on 2026-03-08 and
// 2026-11-01; 23.5 and 24.5 in Australia/Lord_Howe). A boundary whose
// wall time the zone skips moves forward by the gap (02:30 on 2026-03-08
// in Los Angeles is 03:30 PDT); one the zone shows twice is its first
// instant (01:30 on 2026-11-01 is 01:30 PDT). [time.Date] leaves both
// unspecified and chooses differently per zone, so the package resolves
// them itself. An anchor typed as a wall time that does not exist is
// refused ([ParseAnchor]).
//
// # Sums buckets never straddle a boundary
//
// A provider of sums (Stripe's meter summaries by the hour, OpenAI's
// costs by the UTC day) reports one number per bucket, and a record
// counts in the period that holds its bucket's start. A bucket with a
// boundary inside it would put usage of the next period into the one
// before, and no sum can be split without inventing numbers. Reading
// finer buckets at the boundary is not always possible either (OpenAI's
// costs come only by the day). So hookline refuses such a configuration
// at start: [FitsBuckets] returns a [*StraddleError] naming the period,
// anchor, time zone and width when any boundary is not a bucket start.
// Day buckets in UTC fit only periods whose boundaries are UTC midnights
// (time zone UTC, or a zone at offset zero all year, with a midnight
// anchor): they refuse a Los Angeles month, and a London one because of
// summer time. Hour buckets refuse zones with a 30- or 45-minute offset
// (Asia/Kolkata, Asia/Kathmandu, Australia/Adelaide) and Lord Howe,
// whose summer time moves by 30 minutes. [Recurrence.Straddles] checks
// one bucket.
//
// # Close
//
// A period's close is its end plus a per-workload grace ([Close],
// [ParseGrace]), the provider's invoice finalisation delay. Usage for a
// period that arrives after its close can no longer change that
// invoice's cap decision.
//
// # Zoneinfo
//
// Lambda's runtime has no zoneinfo, so this package imports time/tzdata
// and every binary that uses periods can load IANA zones. It adds about
// 400 KB to a binary (405 KB measured with Go 1.26).
//
// # Storage
//
// A recurrence is stored as its [Config]: the interval's name, the anchor
// in RFC 3339 UTC and the zone's name. A period's key is [Period.ID], its
// start and end in UTC. Instants are supported in the years 0001 to 9998.
package period

import _ "time/tzdata" // Lambda has no zoneinfo of its own.
