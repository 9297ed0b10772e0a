package providersim_test

import (
	"context"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/pkg/provider"
)

// TestForgetDropsOldCharges: a simulator that runs for hours (the live
// lab at 500 charges a second) forgets the charges made before a time,
// and with them what it keeps for their keys: a lookup of a forgotten
// key finds nothing, the counts leave them out, a key saved by a keyed
// profile executes again, and new charges keep their own IDs.
func TestForgetDropsOldCharges(t *testing.T) {
	sim := start(t, providersim.Config{Profile: providersim.ProfileHonoursKeys})
	c, err := provider.New(provider.Config{BaseURL: sim.URL()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	charge := func(key, event string) provider.Charge {
		t.Helper()
		res := c.CreateCharge(ctx, key, chargeReq(event, 500, "cus_1"))
		if res.Outcome != provider.Succeeded || res.Charge == nil {
			t.Fatalf("charge %s: %+v", key, res)
		}
		return *res.Charge
	}
	old1, old2 := charge("k-old-1", "e-old"), charge("k-old-2", "e-old")
	cutoff := time.Now() // after the old charges were answered, before the new ones were asked for
	kept := charge("k-new", "e-new")
	if n := sim.Charges.Forget(cutoff); n != 2 {
		t.Fatalf("Forget dropped %d charges; want the 2 made before the cutoff", n)
	}
	if n := sim.Charges.Forget(cutoff); n != 0 {
		t.Fatalf("Forget again dropped %d charges; want none", n)
	}
	if got := sim.Charges.TotalCharges(); got != 1 || sim.Charges.ChargeCount("e-old") != 0 || sim.Charges.SucceededCount("e-old") != 0 ||
		sim.Charges.Duplicates() != 0 || sim.Charges.DuplicateCharges() != 0 {
		t.Fatalf("after Forget: %d charges, %d of e-old (%d succeeded), %d duplicates; want only the new one",
			got, sim.Charges.ChargeCount("e-old"), sim.Charges.SucceededCount("e-old"), sim.Charges.Duplicates())
	}
	if _, found, err := c.LookupCharge(ctx, "k-old-1"); err != nil || found {
		t.Fatalf("lookup of a forgotten key: found %v, %v; want nothing", found, err)
	}
	if ch, found, err := c.LookupCharge(ctx, "k-new"); err != nil || !found || ch.ID != kept.ID {
		t.Fatalf("lookup of a kept key: %+v, %v, %v; want %s", ch, found, err, kept.ID)
	}
	// A forgotten key executes again, under a new ID.
	again := charge("k-old-1", "e-old")
	if again.ID == old1.ID || again.ID == old2.ID || again.ID == kept.ID || sim.Charges.TotalCharges() != 2 {
		t.Fatalf("the charge after Forget is %s (forgotten %s, %s; kept %s), of %d; want a new ID of 2",
			again.ID, old1.ID, old2.ID, kept.ID, sim.Charges.TotalCharges())
	}
}
