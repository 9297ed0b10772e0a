package paymentworker_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/internal/emf"
	"github.com/hookline/hookline/internal/paymentworker"
	"github.com/hookline/hookline/internal/testkit"
	"github.com/hookline/hookline/pkg/idempotency"
	"github.com/hookline/hookline/pkg/provider"
)

// rolloutRig is a contract rig whose worker is the new build, keying a
// Stripe invoice by the invoice's ID, beside the earlier build that keyed
// it by the event's ID: the earlier build's registry holds its claims for
// a minute (or until its invocation's deadline), in the same table.
type rolloutRig struct {
	*contractRig
	earlier *idempotency.Registry
	// onRetry, when set, runs when the new build asks for a record to
	// come back.
	onRetry func(receipt string)
	lookups *failingLookups
	metrics *testkit.SyncBuffer
}

func newRolloutRig(t *testing.T, env *localaws.Env) *rolloutRig {
	t.Helper()
	r := &rolloutRig{contractRig: newContractRig(t, env, providersim.ProfileIgnoresKeys, providersim.Config{}), metrics: &testkit.SyncBuffer{}}
	r.lookups = &failingLookups{Charger: r.client}
	const skew = 100 * time.Millisecond
	var err error
	r.earlier, err = idempotency.New(idempotency.Config{Store: r.store, Namespace: "payments", InProgressTimeout: time.Minute, DeadlineMargin: contractHorizon + skew})
	must(t, err)
	maps, err := paymentworker.NewMappings(map[string]paymentworker.Mapping{"stripe": paymentworker.StripeInvoiceMapping})
	must(t, err)
	r.worker, err = paymentworker.New(paymentworker.Config{Registry: r.reg, Provider: r.lookups, Queue: hookQueue{r}, Mappings: maps,
		RetryBase: 100 * time.Millisecond, Horizon: contractHorizon, ClockSkew: skew, Metrics: emf.New(r.metrics, "hookline")})
	must(t, err)
	return r
}

// invoiceMsg is the invoice.finalized event eventID of invoice in_<eventID>,
// as the stripe source queues it.
func (r *rolloutRig) invoiceMsg(eventID string, amount int64) events.SQSMessage {
	body := strings.Replace(stripeInvoiceEvent(eventID, "invoice.finalized"), `"in_1QxYz"`, fmt.Sprintf(`"in_%s"`, eventID), 1)
	body = strings.Replace(body, `"amount_due":4200`, fmt.Sprintf(`"amount_due":%d`, amount), 1)
	m := r.msg(eventID, body, 1)
	src := "stripe"
	m.MessageAttributes["source"] = events.SQSMessageAttribute{DataType: "String", StringValue: &src}
	return m
}

// invoiceCharge is what a build charges for the invoice of eventID.
func invoiceCharge(eventID string, amount int64) provider.ChargeRequest {
	return provider.ChargeRequest{EventID: eventID, Customer: "cus_inv_1", Amount: amount, Currency: "usd"}
}

// earlierKey is the key the earlier build claimed event eventID under.
func earlierKey(eventID string) string { return "stripe:" + eventID }

// claimAsEarlier claims eventID as the earlier build did, within an
// invocation that ends after lease (0: no deadline, the registry's minute).
func (r *rolloutRig) claimAsEarlier(t *testing.T, eventID string, charge provider.ChargeRequest, lease time.Duration) idempotency.Claim {
	t.Helper()
	ctx := context.Background()
	if lease > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, lease)
		defer cancel()
	}
	claim, err := r.earlier.Claim(ctx, earlierKey(eventID), paymentworker.Payment{Charge: charge}.Hash())
	must(t, err)
	if claim.Status != idempotency.StatusClaimed {
		t.Fatalf("earlier build's claim of %s: %v", eventID, claim.Status)
	}
	return claim
}

// chargeAsEarlier sends attempt n of eventID as the earlier build did:
// under the hashed key, or under the encoding before it.
func (r *rolloutRig) chargeAsEarlier(eventID string, n int, legacyEncoding bool, charge provider.ChargeRequest) provider.Result {
	key := paymentworker.ProviderKey("stripe", eventID, n)
	if legacyEncoding {
		key = paymentworker.LegacyProviderKey(earlierKey(eventID), n)
	}
	return r.client.CreateCharge(context.Background(), key, charge)
}

// claimAndCharge claims eventID as the earlier build did, with a lease
// of its invocation's lease, and sends its attempt's charge of amount,
// which the provider makes.
func (r *rolloutRig) claimAndCharge(t *testing.T, eventID string, amount int64, lease time.Duration, legacyEncoding bool) idempotency.Claim {
	t.Helper()
	claim := r.claimAsEarlier(t, eventID, invoiceCharge(eventID, amount), lease)
	if res := r.chargeAsEarlier(eventID, claim.Attempt, legacyEncoding, invoiceCharge(eventID, amount)); res.Outcome != provider.Succeeded {
		t.Fatalf("earlier build's charge: %v", res.Err)
	}
	return claim
}

// failingLookups fails the next n lookups, then looks up at the provider.
type failingLookups struct {
	paymentworker.Charger
	n       atomic.Int32
	creates atomic.Int32
}

func (f *failingLookups) LookupCharge(ctx context.Context, key string) (*provider.Charge, bool, error) {
	if f.n.Add(-1) >= 0 {
		return nil, false, errors.New("lookup: connection reset")
	}
	return f.Charger.LookupCharge(ctx, key)
}

func (f *failingLookups) CreateCharge(ctx context.Context, key string, req provider.ChargeRequest) provider.Result {
	f.creates.Add(1)
	return f.Charger.CreateCharge(ctx, key, req)
}

// hookQueue is the rig's recording queue, with its onRetry hook.
type hookQueue struct{ r *rolloutRig }

func (q hookQueue) RetryAfter(ctx context.Context, receipt string, d time.Duration) {
	q.r.queue.RetryAfter(ctx, receipt, d)
	if q.r.onRetry != nil {
		q.r.onRetry(receipt)
	}
}

func (q hookQueue) DeadLetter(ctx context.Context, m events.SQSMessage, reason string) error {
	return q.r.queue.DeadLetter(ctx, m, reason)
}

func (q hookQueue) MaxReceiveCount(ctx context.Context) int { return q.r.queue.MaxReceiveCount(ctx) }

// TestRolloutFromEveryStateOfTheEarlierKeys: the build before effect keys
// claimed a Stripe invoice event under the event's ID and sent its charge
// under that ID's provider keys; the new build keys the invoice by its
// ID. Each state the earlier build can leave its key in is finished by
// the new build, and none charges twice.
func TestRolloutFromEveryStateOfTheEarlierKeys(t *testing.T) {
	env := localaws.StartForTest(t)
	tests := []struct {
		name string
		// given sets the earlier build's key for eventID in its state.
		given func(t *testing.T, r *rolloutRig, eventID string)
		// failLookups is how many of the new build's lookups fail.
		failLookups int32
		// wantEnd is how the new build's delivery ends; wantCharges the
		// event's successful charges at the provider, all builds together.
		wantEnd     string
		wantReason  string
		wantCharges int
	}{
		{
			name: "held, then completed by the earlier build",
			given: func(t *testing.T, r *rolloutRig, id string) {
				claim := r.claimAsEarlier(t, id, invoiceCharge(id, 4200), 0)
				r.finishLater(t, id, claim, invoiceCharge(id, 4200))
			},
			wantEnd: "acknowledged", wantCharges: 1,
		},
		{
			name: "held for another payload, then completed by the earlier build",
			given: func(t *testing.T, r *rolloutRig, id string) {
				claim := r.claimAsEarlier(t, id, invoiceCharge(id, 4000), 0)
				r.finishLater(t, id, claim, invoiceCharge(id, 4000))
			},
			wantEnd: "dead_lettered", wantReason: "legacy_payload_mismatch", wantCharges: 1,
		},
		{
			name: "lapsed after a lost answer to a charge the provider committed",
			given: func(t *testing.T, r *rolloutRig, id string) {
				claim := r.claimAsEarlier(t, id, invoiceCharge(id, 4200), 200*time.Millisecond)
				r.sim.Faults.InjectFaults(1, providersim.Fault{Kind: providersim.FaultDropAfterCharge})
				if res := r.chargeAsEarlier(id, claim.Attempt, false, invoiceCharge(id, 4200)); res.Outcome != provider.Unknown {
					t.Fatalf("earlier build's charge: %v, want an unknown outcome", res.Outcome)
				}
				must(t, r.earlier.Release(context.Background(), earlierKey(id), claim.Token, time.Now().Add(contractHorizon)))
			},
			wantEnd: "acknowledged", wantCharges: 1,
		},
		{
			name: "lapsed after a charge sent under the keys before the hash",
			given: func(t *testing.T, r *rolloutRig, id string) {
				r.claimAndCharge(t, id, 4200, 200*time.Millisecond, true)
			},
			wantEnd: "acknowledged", wantCharges: 1,
		},
		{
			name: "lapsed on its second attempt, the first charged",
			given: func(t *testing.T, r *rolloutRig, id string) {
				first := r.claimAndCharge(t, id, 4200, 200*time.Millisecond, false)
				// Released at once, as if the answer had said it failed:
				// the second attempt's claim dies before it looks up.
				must(t, r.earlier.Release(context.Background(), earlierKey(id), first.Token, time.Now().Add(-time.Millisecond)))
				if second := r.claimAsEarlier(t, id, invoiceCharge(id, 4200), 200*time.Millisecond); second.Attempt != 2 {
					t.Fatalf("second claim is attempt %d", second.Attempt)
				}
			},
			wantEnd: "acknowledged", wantCharges: 1,
		},
		{
			name: "lapsed with a charge the new build's lookups cannot see at first",
			given: func(t *testing.T, r *rolloutRig, id string) {
				r.claimAndCharge(t, id, 4200, 200*time.Millisecond, false)
			},
			failLookups: 2,
			wantEnd:     "acknowledged", wantCharges: 1,
		},
		{
			name: "lapsed before anything was sent",
			given: func(t *testing.T, r *rolloutRig, id string) {
				r.claimAsEarlier(t, id, invoiceCharge(id, 4200), 200*time.Millisecond)
			},
			wantEnd: "acknowledged", wantCharges: 1,
		},
		{
			name: "lapsed for another payload after a charge",
			given: func(t *testing.T, r *rolloutRig, id string) {
				r.claimAndCharge(t, id, 4000, 200*time.Millisecond, false)
			},
			wantEnd: "dead_lettered", wantReason: "legacy_payload_mismatch", wantCharges: 1,
		},
		{
			name: "completed with the same payload",
			given: func(t *testing.T, r *rolloutRig, id string) {
				claim := r.claimAsEarlier(t, id, invoiceCharge(id, 4200), 0)
				must(t, r.finish(id, claim, invoiceCharge(id, 4200)))
			},
			wantEnd: "acknowledged", wantCharges: 1,
		},
		{
			name: "completed with another payload",
			given: func(t *testing.T, r *rolloutRig, id string) {
				claim := r.claimAsEarlier(t, id, invoiceCharge(id, 4000), 0)
				must(t, r.finish(id, claim, invoiceCharge(id, 4000)))
			},
			wantEnd: "dead_lettered", wantReason: "legacy_payload_mismatch", wantCharges: 1,
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newRolloutRig(t, env)
			id := fmt.Sprintf("evt_rollout_%d", i)
			// Given the earlier build's key of the event in its state,
			tt.given(t, r, id)
			// when the event comes to the new build (and back, as often as
			// the new build asks),
			r.lookups.n.Store(tt.failLookups)
			got := r.settle(t, r.invoiceMsg(id, 4200))
			// then it ends as it should, and the event is charged once in
			// all.
			if got != tt.wantEnd {
				t.Fatalf("ended %s (%s), want %s", got, r.queue.DeadLettered("m-"+id+"-1"), tt.wantEnd)
			}
			if reason := r.queue.DeadLettered("m-" + id + "-1"); !strings.HasPrefix(reason, tt.wantReason) {
				t.Fatalf("dead-letter reason %q, want %q", reason, tt.wantReason)
			}
			if tt.wantReason != "" && !strings.Contains(r.metrics.String(), `"Reason":"`+tt.wantReason+`"`) {
				t.Fatalf("no %s dead letter counted: %s", tt.wantReason, r.metrics.String())
			}
			r.sim.Charges.WaitCommits()
			if n := r.sim.Charges.SucceededCount(id); n != tt.wantCharges {
				t.Fatalf("%s charged %d times, want %d", id, n, tt.wantCharges)
			}
			// And the earlier build's key is settled: a redelivery to the
			// new build charges nothing either.
			before := r.lookups.creates.Load()
			m := r.invoiceMsg(id, 4200)
			m.MessageId = "m-" + id + "-again"
			r.settle(t, m)
			if n := r.lookups.creates.Load() - before; n != 0 {
				t.Fatalf("a redelivery sent %d charges", n)
			}
		})
	}
}

// finish charges the earlier build's claim and completes it, as the
// earlier build did for a charge that succeeded.
func (r *rolloutRig) finish(eventID string, claim idempotency.Claim, charge provider.ChargeRequest) error {
	res := r.chargeAsEarlier(eventID, claim.Attempt, false, charge)
	if res.Outcome != provider.Succeeded {
		return fmt.Errorf("earlier build's charge: %w", res.Err)
	}
	return r.earlier.Complete(context.Background(), earlierKey(eventID), claim.Token,
		[]byte(fmt.Sprintf(`{"charge_id":%q,"status":"succeeded","amount":%d,"currency":"usd"}`, res.Charge.ID, charge.Amount)))
}

// finishLater finishes the earlier build's held claim once the new build
// has met it: when the new build's first delivery asks to come back.
func (r *rolloutRig) finishLater(t *testing.T, eventID string, claim idempotency.Claim, charge provider.ChargeRequest) {
	t.Helper()
	var once sync.Once
	r.onRetry = func(receipt string) {
		if receipt == "m-"+eventID+"-1" {
			once.Do(func() {
				if err := r.finish(eventID, claim, charge); err != nil {
					t.Errorf("the earlier build finishing: %v", err)
				}
			})
		}
	}
}
