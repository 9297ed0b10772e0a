// Package price turns a meter's counted units into spend: an exact
// decimal price of spend units per meter unit, the instant from which it
// holds, and the exact sum of units × price that a cap is compared with.
// It is pure: it reads no clock and stores nothing, and it never decides
// which path counted what. The max(W, P*) rule and the per-record union
// stay in the meter's own units; only what they count is priced.
//
//	pricing, err := price.ParsePricing(`{"scale": 6, "meters": {"llm": {"tokens": {"unit": "tokens",
//	    "price": [{"price": "2.5"}, {"price": "2", "from": "2026-04-01T00:00:00Z"}]}}}}`)
//	if err != nil {
//		return err // each a *price.FieldError naming the field: meters.llm.tokens.price[1].from
//	}
//	sched, err := pricing.For(price.Meter{Source: "llm", Name: "tokens"})
//	p, err := sched.PriceAt(record.Occurred) // 2.5 before April, 2 from it
//	total := price.Zero(pricing.SpendScale())
//	err = total.Add(record.Units, p) // exact: 1001 tokens at 2.5 is 2502.5
//	stored := total.Nano()           // 2502500000: what DynamoDB's ADD adds
//	over := total.Over(cap)          // Rounded() > cap, Rounded() the ceiling: 2503
//
// # Prices
//
// A [Price] is parsed from decimal text ("2.5", "0.000004", "25e-1"),
// exactly, by github.com/cockroachdb/apd/v3: already in hookline's module
// graph (bojanz/currency uses it for payments), kept by CockroachDB, and
// explicit about exactness, so that a price is never a float and never
// silently rounded. A meter's [Schedule] holds its prices by the instant
// each starts; [Schedule.PriceAt] is the last at or before an instant, so
// a price change applies to usage that occurs at or after it and never
// reprices what was counted before. Usage before a meter's first price
// has none ([ErrNoPrice]).
//
// # Exact spend, rounded once, up
//
// A deployment's [Scale] is the number of decimals k its spend is kept
// to; every price must have at most k ([Schedule.Check], refused at
// start). A meter unit's price is then a whole number of 10^-k spend
// units, and a [Spend] is one int64 of them: units × price is an exact
// integer product, and the sum of any number of them, in any order, per
// bucket or per period, is exact. That integer is the storage form: a
// DynamoDB number holds it, and an UpdateExpression's ADD adds to it
// atomically and exactly. Rounding happens once, where a total is
// compared with a cap: [Spend.Rounded] is the ceiling in whole spend
// units, so a cap never trips later than exact arithmetic would, and
// [Spend.Over] is Rounded() > cap. Nothing is rounded per record.
//
// The scale is part of every stored spend: a stored total read at another
// scale means another amount, so the scale is configured, not derived
// from the prices, and whatever stores spend should store the scale with
// it and refuse a change.
//
// # Overflow
//
// A Spend holds at most [MaxNano] (the int64 range) of 10^-k spend units:
// about 9.2 × 10^18 / 10^k spend units, 9.2 × 10^12 at scale 6. Start
// refuses a scale above [MaxScale] (12) and a price beyond int64 at the
// scale; [Scale.MaxCap] bounds a cap at half the range, so a total may
// run past its cap by as much again. Arithmetic is checked: a product or
// sum beyond the range saturates at MaxNano and reports [ErrOverflow], and
// a saturated spend stays saturated and is over every cap. An overflow so
// pauses a workload early, never lets it run on after a wrap. DynamoDB's
// numbers hold 38 digits, so a stored total past int64 is still exact
// there, and [ParseNano] reads it back as saturated.
//
// # No prices
//
// A nil [*Pricing] is a deployment without prices, which behaves exactly
// as before prices existed: every meter costs [One] at scale 0, so a
// Spend's stored form is the units themselves, Rounded is the identity,
// and [Pricing.CheckMeters] leaves the one unit (SPEND_UNIT) check as it
// was.
//
// # Start-up checks
//
// [ParsePricing] validates the configuration and names each bad field.
// [Pricing.CheckMeters] refuses a meter a priced deployment cannot price,
// naming it, and a price for a meter nothing counts. [Pricing.CheckBuckets]
// refuses a price change inside a sums bucket, which counts one number
// for its whole width. [CheckCostsOrTokens] refuses OpenAI costs and
// OpenAI usage meters read for the same projects, which would count the
// same spend twice: a workload caps OpenAI by one or the other.
package price
