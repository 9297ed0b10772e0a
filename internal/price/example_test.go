package price_test

import (
	"fmt"
	"time"

	"github.com/hookline/hookline/internal/price"
)

// One workload of tokens, calls and GPU hours, capped in micro-dollars at
// scale 3: each record is priced at its instant and summed exactly, and
// the total is rounded once, up, where it meets the cap.
func Example() {
	pricing, err := price.ParsePricing(pricesOfOneWorkload)
	if err != nil {
		fmt.Println(err)
		return
	}
	records := []struct {
		source, meter string
		at            time.Time
		units         int64
	}{
		{"llm", "tokens", time.Date(2026, 3, 31, 23, 0, 0, 0, time.UTC), 1001}, // 2.5 a token
		{"llm", "tokens", time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC), 1001},   // 2 from April 1
		{"calls", "api", time.Date(2026, 4, 1, 1, 0, 0, 0, time.UTC), 3},       // 0.004 a call
		{"gpu", "gpu_hours", time.Date(2026, 4, 1, 2, 0, 0, 0, time.UTC), 1},   // 2.5 dollars an hour
	}
	total := price.Zero(pricing.SpendScale())
	for _, r := range records {
		sched, err := pricing.For(price.Meter{Source: r.source, Name: r.meter})
		if err != nil {
			fmt.Println(err)
			return
		}
		p, err := sched.PriceAt(r.at)
		if err != nil {
			fmt.Println(err)
			return
		}
		if err := total.Add(r.units, p); err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%d %s at %s: total %s (stored %d)\n", r.units, r.meter, p, total, total.Nano())
	}
	fmt.Println("rounded once, up:", total.Rounded(), "over a cap of 2504502:", total.Over(2504502))
	// Output:
	// 1001 tokens at 2.5: total 2502.500 (stored 2502500)
	// 1001 tokens at 2: total 4504.500 (stored 4504500)
	// 3 api at 0.004: total 4504.512 (stored 4504512)
	// 1 gpu_hours at 2500000: total 2504504.512 (stored 2504504512)
	// rounded once, up: 2504505 over a cap of 2504502: true
}
