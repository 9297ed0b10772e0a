package idempotencytest_test

import (
	"context"
	"fmt"
	"log"
	"testing"
	"time"

	"github.com/hookline/hookline/pkg/idempotency"
	"github.com/hookline/hookline/pkg/idempotency/idempotencytest"
)

// A store implementation runs the suite from its own test.
func ExampleRun() {
	testMemoryStore := func(t *testing.T) {
		idempotencytest.Run(t, func(t *testing.T) idempotency.Store {
			return idempotency.NewMemory()
		})
	}
	_ = testMemoryStore // func TestMemoryStore(t *testing.T) in a _test.go file
}

// A Counting store proves that a path avoided the store: here a duplicate
// answered from the Registry's cache of completed keys.
func ExampleNewCounting() {
	ctx := context.Background()
	clock := idempotencytest.NewClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	store := idempotencytest.NewCounting(idempotency.NewMemory())
	reg, err := idempotency.New(idempotency.Config{
		Store: store, Namespace: "payments", CacheSize: 16, Now: clock.Now,
	})
	if err != nil {
		log.Fatal(err)
	}
	hash := idempotency.Hash("cus_1", "1999", "eur")
	c, err := reg.Claim(ctx, "stripe:evt_1", hash)
	if err != nil {
		log.Fatal(err)
	}
	if err := reg.Complete(ctx, "stripe:evt_1", c.Token, []byte("ch_1")); err != nil {
		log.Fatal(err)
	}
	clock.Advance(time.Minute)
	dup, err := reg.Claim(ctx, "stripe:evt_1", hash)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(dup.Status, string(dup.Result))
	fmt.Printf("%+v\n", store.Calls())
	// Output:
	// already_completed ch_1
	// {Claim:1 Complete:1 Release:0 Get:0}
}
