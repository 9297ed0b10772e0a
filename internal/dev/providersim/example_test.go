package providersim_test

import (
	"context"
	"fmt"
	"log"

	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/pkg/provider"
)

// Start a simulator on a free loopback port and charge through it. Under
// ProfileIgnoresKeys a resend with the same key charges again, which the
// simulator counts as a duplicate.
func Example() {
	sim, err := providersim.New(providersim.Config{Profile: providersim.ProfileIgnoresKeys})
	if err != nil {
		log.Fatal(err)
	}
	if err := sim.Start(); err != nil {
		log.Fatal(err)
	}
	defer sim.Close()
	client, err := provider.New(provider.Config{BaseURL: sim.URL()})
	if err != nil {
		log.Fatal(err)
	}

	ctx := context.Background()
	req := provider.ChargeRequest{EventID: "evt_1", Customer: "cus_1", Amount: 1999, Currency: "eur"}
	for range 2 {
		res := client.CreateCharge(ctx, "payments:evt_1", req)
		fmt.Println(res.Outcome)
	}
	fmt.Println("duplicates:", sim.Charges.DuplicateCharges())
}
