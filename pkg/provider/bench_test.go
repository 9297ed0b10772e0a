package provider_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/pkg/provider"
)

// BenchmarkCreateCharge measures charges per second against the simulator
// on loopback, one caller at a time and with parallel callers.
func BenchmarkCreateCharge(b *testing.B) {
	for _, mode := range []string{"serial", "parallel"} {
		b.Run(mode, func(b *testing.B) {
			sim := startSim(b, providersim.Config{HonourIdempotencyKeys: true})
			c, err := provider.New(provider.Config{BaseURL: sim.URL(), Timeout: 5 * time.Second})
			if err != nil {
				b.Fatal(err)
			}
			var seq atomic.Int64
			charge := func() {
				n := seq.Add(1)
				id := fmt.Sprintf("evt_%d", n)
				req := provider.ChargeRequest{EventID: id, Customer: "cus_1", Amount: 1000, Currency: "eur"}
				if res := c.CreateCharge(context.Background(), id+":charge", req); res.Outcome != provider.Succeeded {
					b.Errorf("%s: %v %v", id, res.Outcome, res.Err)
				}
			}
			b.ResetTimer()
			start := time.Now()
			if mode == "serial" {
				for b.Loop() {
					charge()
				}
			} else {
				b.SetParallelism(8)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						charge()
					}
				})
			}
			b.ReportMetric(float64(seq.Load())/time.Since(start).Seconds(), "req/s")
			if sim.Charges.TotalCharges() != int(seq.Load()) {
				b.Fatalf("charges = %d, want %d", sim.Charges.TotalCharges(), seq.Load())
			}
		})
	}
}
