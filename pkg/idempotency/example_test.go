package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strconv"
	"time"

	"github.com/hookline/hookline/internal/awsconf"
	"github.com/hookline/hookline/pkg/idempotency"
	"github.com/hookline/hookline/pkg/idempotency/idempotencytest"
)

// A worker claims a key per message, acts only when it holds the claim, and
// records the result. The in-memory store stands in for DynamoDB here.
func Example() {
	ctx := context.Background()
	reg, err := idempotency.New(idempotency.Config{
		Store: idempotency.NewMemory(), Namespace: "payments", CacheSize: 1024,
	})
	if err != nil {
		log.Fatal(err)
	}

	type event struct {
		Source, ID, Customer, Currency string
		Amount                         int64
	}
	charges := 0
	handle := func(ev event) (string, error) {
		// key = source + event ID; the hash covers the fields that must not
		// change under one key.
		key := ev.Source + ":" + ev.ID
		c, err := reg.Claim(ctx, key, idempotency.Hash(ev.Customer, strconv.FormatInt(ev.Amount, 10), ev.Currency))
		if err != nil {
			return "", err // the store is unavailable: retry the message later
		}
		switch c.Status {
		case idempotency.StatusAlreadyCompleted:
			return "duplicate of " + string(c.Result), nil // the stored result, no new effect
		case idempotency.StatusInProgress:
			return "", errors.New("held by another worker: retry later")
		case idempotency.StatusPayloadMismatch:
			return "", errors.New("key used for a different payload")
		}
		// With c.Attempt > 1 an earlier holder may have acted: look for its
		// effect before acting again.
		charges++
		res := "ch_" + strconv.Itoa(charges) // the provider's answer
		if err := reg.Complete(ctx, key, c.Token, []byte(res)); err != nil {
			return "", err
		}
		return "charged " + res, nil
	}

	ev := event{Source: "stripe", ID: "evt_1", Customer: "cus_1", Currency: "eur", Amount: 1999}
	changed := ev
	changed.Amount = 2999
	for _, e := range []event{ev, ev, changed} {
		out, err := handle(e)
		if err != nil {
			fmt.Println("error:", err)
			continue
		}
		fmt.Println(out)
	}
	// Output:
	// charged ch_1
	// duplicate of ch_1
	// error: key used for a different payload
}

func ExampleNewDynamoDB() {
	ctx := context.Background()
	cfg, err := awsconf.Load(ctx)
	if err != nil {
		log.Fatal(err)
	}
	store, err := idempotency.NewDynamoDB(idempotency.DynamoDBConfig{
		Client: awsconf.DynamoDB(cfg, ""),
		Table:  "hookline-idempotency",
	})
	if err != nil {
		log.Fatal(err)
	}
	reg, err := idempotency.New(idempotency.Config{Store: store, Namespace: "payments", CacheSize: 1024})
	if err != nil {
		log.Fatal(err)
	}
	_ = reg
}

// A holder whose work provably had no effect releases its claim at once, and
// the next claim of the key is its second attempt.
func ExampleRegistry_Release() {
	ctx := context.Background()
	clock := idempotencytest.NewClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	reg, err := idempotency.New(idempotency.Config{
		Store: idempotency.NewMemory(), Namespace: "payments", Now: clock.Now,
	})
	if err != nil {
		log.Fatal(err)
	}
	key, hash := "stripe:evt_1", idempotency.Hash("cus_1", "1999", "eur")

	c, err := reg.Claim(ctx, key, hash)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(c.Status, c.Attempt)
	// The provider refused the request before executing it: no effect.
	if err := reg.Release(ctx, key, c.Token, clock.Now()); err != nil {
		log.Fatal(err)
	}

	clock.Advance(time.Second)
	c, err = reg.Claim(ctx, key, hash)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(c.Status, c.Attempt)
	// Output:
	// claimed 1
	// claimed 2
}
