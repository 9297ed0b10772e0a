package paymentworker_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/internal/paymentworker"
	"github.com/hookline/hookline/pkg/provider"
)

// sharedCustomerBody is a payment of customer cus_shared, so that two
// events differ only in their IDs.
func sharedCustomerBody(eventID string) string {
	return fmt.Sprintf(`{"id":%q,"type":"payment.requested","data":{"customer":"cus_shared","amount":4100,"currency":"usd"}}`, eventID)
}

// Event "evt" on its second attempt and event "evt#2" on its first must
// not send one Idempotency-Key: a provider that honours keys would answer
// the second with the first's charge, or refuse it, and the second event
// would never be charged.
func TestEventIDWithHashDoesNotShareAKey(t *testing.T) {
	t.Parallel()
	env := localaws.StartForTest(t)
	r := newContractRig(t, env, providersim.ProfileHonoursKeys, providersim.Config{})
	first := "evt_hash"
	// Given an event whose first attempt failed without a charge (the
	// provider saves the 503 under its key), so it was charged on its
	// second attempt,
	r.sim.Faults.InjectFaults(1, providersim.Fault{Kind: providersim.FaultServerError, Status: 503})
	if got := r.settle(t, r.msg(first, sharedCustomerBody(first), 1)); got != "acknowledged" {
		t.Fatalf("%s ended %s", first, got)
	}
	wantChargedOnce(t, r, first)
	// when another event of the same customer and amount, whose ID is the
	// first's followed by "#2", is delivered,
	second := first + "#2"
	got := r.settle(t, r.msg(second, sharedCustomerBody(second), 1))
	// then it is charged too, once.
	if got != "acknowledged" {
		t.Fatalf("%s ended %s, want acknowledged", second, got)
	}
	wantChargedOnce(t, r, second)
	wantChargedOnce(t, r, first)
}

func TestProviderKeys(t *testing.T) {
	long := strings.Repeat("s", 64)
	worst := strings.Repeat(`#'\:é`, 51) // 255 bytes of everything a key must survive
	tests := []struct {
		name         string
		a, b         [3]string // source, event ID, attempt
		wantSameKeys bool
	}{
		{name: "suffix cannot pose as an attempt", a: [3]string{"payments", "evt", "2"}, b: [3]string{"payments", "evt#2", "1"}},
		{name: "colon cannot move between source and event", a: [3]string{"pay", "ments:evt", "1"}, b: [3]string{"pay:ments", "evt", "1"}},
		{name: "attempts differ", a: [3]string{"payments", "evt", "1"}, b: [3]string{"payments", "evt", "2"}},
		{name: "worst case", a: [3]string{long, worst, "1"}, b: [3]string{long, worst + "x", "1"}},
		{name: "same attempt, same key", a: [3]string{"payments", "evt", "3"}, b: [3]string{"payments", "evt", "3"}, wantSameKeys: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := keyOf(t, tt.a), keyOf(t, tt.b)
			if (a == b) != tt.wantSameKeys {
				t.Fatalf("keys %q and %q: same = %v, want %v", a, b, a == b, tt.wantSameKeys)
			}
			for _, k := range []string{a, b} {
				if len(k) != paymentworker.ProviderKeyLen || len(k) > 255 || !strings.HasPrefix(k, paymentworker.ProviderKeyPrefix) ||
					strings.Trim(k[len(paymentworker.ProviderKeyPrefix):], "0123456789abcdef") != "" {
					t.Fatalf("key %q is not %d characters of prefix and hex", k, paymentworker.ProviderKeyLen)
				}
			}
		})
	}
}

// The encoding is a contract with every charge already made: a change of
// it would make lookups miss earlier attempts, so it is pinned.
func TestProviderKeyIsStable(t *testing.T) {
	const want = "hl1_83455ee756bdd621209a30e457438c0f3504cbb5c056779dc3f3dbcfe65d273b"
	if got := paymentworker.ProviderKey("payments", "evt_1", 1); got != want {
		t.Fatalf("ProviderKey(payments, evt_1, 1) = %s, want %s", got, want)
	}
	if got := paymentworker.ProviderKey("payments", "evt_1", 0); got != want {
		t.Fatalf("attempt 0 is not attempt 1: %s", got)
	}
	if got := paymentworker.Reference("payments", "evt_1", 2); got != "payments:evt_1 attempt 2" {
		t.Fatalf("Reference = %q", got)
	}
	if got := paymentworker.LegacyProviderKey("payments:evt_1", 2); got != "payments:evt_1#2" {
		t.Fatalf("LegacyProviderKey = %q", got)
	}
}

func keyOf(t *testing.T, f [3]string) string {
	t.Helper()
	n, err := strconv.Atoi(f[2])
	must(t, err)
	return paymentworker.ProviderKey(f[0], f[1], n)
}

// A claim started before the hashed keys sent its charge under the legacy
// key; the worker that takes it over must find that charge, not charge
// again under the new key.
func TestClaimStartedUnderLegacyKeysFinishesUnderNewOnes(t *testing.T) {
	t.Parallel()
	env := localaws.StartForTest(t)
	for _, p := range []providersim.Profile{providersim.ProfileHonoursKeys, providersim.ProfileIgnoresKeys} {
		t.Run(p.String(), func(t *testing.T) {
			t.Parallel()
			r := newContractRig(t, env, p, providersim.Config{})
			id := "evt_rollout_" + p.String()
			body := sharedCustomerBody(id)
			pay, err := paymentworker.ParseMessage(r.msg(id, body, 1))
			must(t, err)
			// Given a worker of the earlier encoding that claimed the event,
			// charged it under the legacy key and died before completing,
			claim, err := r.reg.Claim(context.Background(), pay.Key(), pay.Hash())
			must(t, err)
			if claim.Attempt != 1 {
				t.Fatalf("claim attempt %d, want 1", claim.Attempt)
			}
			res := r.setupCharge(t, paymentworker.LegacyProviderKey(pay.Key(), 1), pay.Charge)
			if res.Outcome != provider.Succeeded {
				t.Fatalf("legacy charge: %v", res.Err)
			}
			// when the event comes back to today's worker after the lease,
			got := r.settle(t, r.msg(id, body, 1))
			// then it completes with the charge it finds, and charges nothing.
			if got != "acknowledged" {
				t.Fatalf("ended %s", got)
			}
			wantChargedOnce(t, r, id)
		})
	}
}

// Under the legacy encoding "evt" attempt 2 and "evt#2" attempt 1 shared a
// key. A takeover of "evt#2" that finds the other event's charge under
// that key must not take it for its own, nor for a conflict.
func TestLegacyLookupIgnoresAnotherEventsCharge(t *testing.T) {
	t.Parallel()
	env := localaws.StartForTest(t)
	r := newContractRig(t, env, providersim.ProfileIgnoresKeys, providersim.Config{})
	other, id := "evt_legacy", "evt_legacy#2"
	otherPay, err := paymentworker.ParseMessage(r.msg(other, sharedCustomerBody(other), 1))
	must(t, err)
	pay, err := paymentworker.ParseMessage(r.msg(id, sharedCustomerBody(id), 1))
	must(t, err)
	// Given the other event charged on its second attempt under the legacy
	// key "payments:evt_legacy#2", and a claim of this event whose worker
	// died before it sent anything,
	if res := r.setupCharge(t, paymentworker.LegacyProviderKey(otherPay.Key(), 2), otherPay.Charge); res.Outcome != provider.Succeeded {
		t.Fatalf("legacy charge: %v", res.Err)
	}
	_, err = r.reg.Claim(context.Background(), pay.Key(), pay.Hash())
	must(t, err)
	// when this event comes back after the lease,
	got := r.settle(t, r.msg(id, sharedCustomerBody(id), 1))
	// then it is charged, once, and the other event's charge is untouched.
	if got != "acknowledged" {
		t.Fatalf("ended %s", got)
	}
	wantChargedOnce(t, r, id)
	if n := r.sim.Charges.SucceededCount(other); n != 1 {
		t.Fatalf("%s charged %d times, want 1", other, n)
	}
}
