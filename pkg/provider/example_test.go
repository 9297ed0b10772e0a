package provider_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/hookline/hookline/pkg/provider"
)

func ExampleClient_CreateCharge() {
	ctx := context.Background()
	c, err := provider.New(provider.Config{BaseURL: "https://api.example.com", APIKey: "sk_test_123"})
	if err != nil {
		log.Fatal(err)
	}
	key := "payments:evt_123" // sent as the Idempotency-Key header
	res := c.CreateCharge(ctx, key, provider.ChargeRequest{
		EventID: "evt_123", Customer: "cus_1", Amount: 1999, Currency: "eur",
	})
	switch res.Outcome {
	case provider.Succeeded, provider.Declined: // final: store it with the key
	case provider.Retriable: // not executed: may be sent again
	case provider.Unknown: // look it up after the horizon
	case provider.Rejected: // poison: send to the DLQ
	}
	fmt.Println(res.Outcome, res.Attempts)
}

// A charge found by lookup after an unknown outcome counts only when it is
// the request's own charge.
func ExampleMatch() {
	req := provider.ChargeRequest{EventID: "evt_123", Customer: "cus_1", Amount: 1999, Currency: "EUR"}
	found := &provider.Charge{
		ID: "ch_1", Status: provider.StatusSucceeded, Amount: 1999, Currency: "eur",
		Customer: "cus_1", IdempotencyKey: "payments:evt_123", EventID: "evt_123",
	}
	fmt.Println(provider.Match("payments:evt_123", req, found).Outcome)

	other := *found
	other.Amount = 2999
	res := provider.Match("payments:evt_123", req, &other)
	fmt.Println(res.Outcome, errors.Is(res.Err, provider.ErrKeyConflict))
	// Output:
	// succeeded
	// rejected true
}
