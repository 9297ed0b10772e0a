package idempotency_test

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/pkg/idempotency"
)

// newBenchRegistry returns a registry on the local DynamoDB table, in a
// namespace of its own.
func newBenchRegistry(b *testing.B) *idempotency.Registry {
	b.Helper()
	env := localaws.StartForTest(b)
	st, err := idempotency.NewDynamoDB(idempotency.DynamoDBConfig{Client: env.DynamoDB, Table: env.TableName("IdempotencyTable")})
	if err != nil {
		b.Fatal(err)
	}
	r, err := idempotency.New(idempotency.Config{Store: st, Namespace: fmt.Sprintf("bench%08x", rand.Uint32())})
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// claimComplete is one unit of protected work: claim a new key, then
// complete it.
func claimComplete(b *testing.B, r *idempotency.Registry, key, hash string, result []byte) {
	c, err := r.Claim(b.Context(), key, hash)
	if err != nil {
		b.Fatal(err)
	}
	if c.Status != idempotency.StatusClaimed {
		b.Fatalf("claim %s: %s", key, c.Status)
	}
	if err := r.Complete(b.Context(), key, c.Token, result); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkClaimComplete measures claims+completes per second, one at a
// time, against local DynamoDB over HTTP.
func BenchmarkClaimComplete(b *testing.B) {
	r := newBenchRegistry(b)
	hash := idempotency.Hash("cus_1", "1999", "eur")
	result := []byte(`{"charge":"ch_1","status":"succeeded"}`)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		claimComplete(b, r, fmt.Sprintf("evt_%d", i), hash, result)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

// BenchmarkClaimCompleteParallel measures the same with 32 concurrent
// workers per core, as many Lambda instances would run.
func BenchmarkClaimCompleteParallel(b *testing.B) {
	r := newBenchRegistry(b)
	hash := idempotency.Hash("cus_1", "1999", "eur")
	result := []byte(`{"charge":"ch_1","status":"succeeded"}`)
	var next atomic.Int64
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			claimComplete(b, r, fmt.Sprintf("evt_%d", next.Add(1)), hash, result)
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

// BenchmarkReplayCached measures a redelivered completed key answered from
// the per-process cache.
func BenchmarkReplayCached(b *testing.B) {
	r, err := idempotency.New(idempotency.Config{Store: idempotency.NewMemory(), Namespace: "bench", CacheSize: 1024})
	if err != nil {
		b.Fatal(err)
	}
	hash := idempotency.Hash("cus_1", "1999", "eur")
	claimComplete(b, r, "evt_1", hash, []byte("ok"))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c, err := r.Claim(b.Context(), "evt_1", hash)
		if err != nil || c.Status != idempotency.StatusAlreadyCompleted {
			b.Fatalf("replay = %+v, %v", c, err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}
