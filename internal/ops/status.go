package ops

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hookline/hookline/internal/paymentworker"
	"github.com/hookline/hookline/internal/spend"
	"github.com/hookline/hookline/internal/usagein"
	"github.com/hookline/hookline/pkg/idempotency"
	"github.com/hookline/hookline/pkg/provider"
)

// States a [Checker] reports.
const (
	// StateCompleted: the idempotency key is COMPLETED for this payload.
	StateCompleted = "COMPLETED"
	// StateInProgress: a worker holds the key.
	StateInProgress = "IN_PROGRESS"
	// StateMismatch: the key is used by another payload; a redrive would
	// dead-letter it again.
	StateMismatch = "MISMATCH"
	// StateApplied: the ledger holds the record with the same units and
	// workload.
	StateApplied = "APPLIED"
	// StateDiffers: the ledger holds the record with other units or another
	// workload; a redrive records a disagreement.
	StateDiffers = "DIFFERS"
	// StateNone: no effect is recorded.
	StateNone = "none"
	// StateNotCounted: a usage message the door read as a zero reading or
	// an event that is not usage: it has no ledger effect to look for.
	StateNotCounted = "NOT_COUNTED"
	// StateUnknown: nothing can tell (no checker, malformed message).
	StateUnknown = "n/a"
	// StateError: the check failed; see Status.Error.
	StateError = "error"
)

// Status is what a [Checker] knows about a message's effect.
type Status struct {
	// Key is the idempotency key or ledger record ID checked.
	Key   string `json:"key,omitempty"`
	State string `json:"state"`
	// Done means the effect is recorded exactly as this message would
	// record it, so deleting the message loses nothing.
	Done  bool   `json:"done"`
	Error string `json:"error,omitempty"`
	// Attempts counts the payment worker's claims of the key: more than one
	// means an earlier attempt may have reached the provider, and the next
	// one looks it up before charging (docs/provider-contract.md).
	Attempts int `json:"attempts,omitempty"`
	// HeldUntil is when an IN_PROGRESS key may be claimed again.
	HeldUntil time.Time `json:"held_until,omitzero"`
}

// Checker tells whether a message's effect is already recorded.
type Checker interface {
	Check(ctx context.Context, m Message) Status
}

// RegistryStatus is the part of [idempotency.Registry] a [PaymentsChecker]
// uses.
type RegistryStatus interface {
	Status(ctx context.Context, key string) (idempotency.Record, bool, error)
}

var _ RegistryStatus = (*idempotency.Registry)(nil)

// PaymentsChecker looks a payment message's key up in the payment worker's
// idempotency registry, with the key and payload hash the worker uses: the
// body is read with the worker's mappings (nil: hookline's shape).
type PaymentsChecker struct {
	Registry RegistryStatus
	Mappings *paymentworker.Mappings
}

// Check implements [Checker].
func (c PaymentsChecker) Check(ctx context.Context, m Message) Status {
	p, err := paymentworker.ParseMessageWith(m.lambdaEvent(), c.Mappings)
	if err != nil {
		return Status{State: StateUnknown, Error: paymentworker.MalformedReason(err)}
	}
	st := Status{Key: p.Key()}
	rec, found, err := c.Registry.Status(ctx, p.Key())
	switch {
	case err != nil:
		st.State, st.Error = StateError, err.Error()
	case !found:
		st.State = StateNone
	case rec.PayloadHash != "" && rec.PayloadHash != p.Hash():
		st.State = StateMismatch
	case rec.State == idempotency.StateCompleted:
		st.State, st.Done, st.Attempts = StateCompleted, true, rec.Attempt
	default:
		st.State, st.Attempts, st.HeldUntil = StateInProgress, rec.Attempt, rec.HeldUntil
	}
	return st
}

// LedgerEntries is the part of [spend.Ledger] a [LedgerChecker] uses.
type LedgerEntries interface {
	Entry(ctx context.Context, recordID string) (spend.Entry, error)
}

var _ LedgerEntries = (*spend.Ledger)(nil)

// LedgerChecker looks a usage message's record up in the spend ledger: one
// GetItem.
type LedgerChecker struct {
	Ledger LedgerEntries
}

// Check implements [Checker].
func (c LedgerChecker) Check(ctx context.Context, m Message) Status {
	body, err := m.payload()
	if err != nil {
		return Status{State: StateUnknown, Error: "malformed usage message: " + err.Error()}
	}
	msg, err := usagein.DecodeMessage([]byte(body), time.Time{})
	if fe, ok := provider.AsFieldError(err); ok {
		return Status{State: StateUnknown, Error: "malformed usage message: " + fe.Field + ": " + fe.Reason}
	}
	if err != nil {
		return Status{State: StateUnknown, Error: "malformed usage message"}
	}
	st := Status{Key: msg.RecordID}
	if msg.Outcome != usagein.OutcomeUsage {
		st.State, st.Done = StateNotCounted, true
		return st
	}
	e, err := c.Ledger.Entry(ctx, msg.RecordID)
	switch {
	case errors.Is(err, spend.ErrNotFound):
		st.State = StateNone
	case err != nil:
		st.State, st.Error = StateError, err.Error()
	case e.Units == msg.Units && e.WorkloadRef == msg.WorkloadRef:
		st.State, st.Done = StateApplied, true
	default:
		st.State = StateDiffers
	}
	return st
}

// check runs the checker of queue on m.
func (o *Ops) check(ctx context.Context, queue string, m Message) Status {
	c, ok := o.cfg.Checkers[queue]
	if !ok || c == nil {
		return Status{State: StateUnknown}
	}
	st := c.Check(ctx, m)
	if st.State == "" {
		return Status{State: StateUnknown, Error: fmt.Sprintf("checker for %s returned no state", queue)}
	}
	return st
}

// CheckerDeps are what [NewCheckers] builds checkers from.
type CheckerDeps struct {
	// DynamoDB reads the idempotency table.
	DynamoDB idempotency.DynamoDBAPI
	// Ledger reads the spend ledger; nil leaves usage queues at "n/a".
	Ledger LedgerEntries
}

// NewCheckers builds a [Checker] for the source queue of every
// dead-letter queue, from what the queue's consumer reads in the template:
// a consumer with IDEMPOTENCY_TABLE and IDEMPOTENCY_NAMESPACE gets a
// [PaymentsChecker] on that registry, reading bodies with the consumer's
// PAYMENT_MAPPINGS (the environment's, else the template's); one with
// LEDGER_TABLE a [LedgerChecker]. Queues with neither get none.
func NewCheckers(r *Resolver, d CheckerDeps) (map[string]Checker, error) {
	out := map[string]Checker{}
	for _, dlq := range r.Template().DeadLetterQueues() {
		src, err := r.Queue(dlq.SourceQueue)
		if err != nil {
			return nil, err
		}
		table, hasTable := r.ConsumerVar(src.Name, "IDEMPOTENCY_TABLE")
		ns, hasNS := r.ConsumerVar(src.Name, "IDEMPOTENCY_NAMESPACE")
		_, hasLedger := r.ConsumerVar(src.Name, "LEDGER_TABLE")
		switch {
		case hasTable && hasNS && d.DynamoDB != nil:
			store, err := idempotency.NewDynamoDB(idempotency.DynamoDBConfig{Client: d.DynamoDB, Table: table})
			if err != nil {
				return nil, fmt.Errorf("ops: registry of %s: %w", src.Name, err)
			}
			reg, err := idempotency.New(idempotency.Config{Store: store, Namespace: ns})
			if err != nil {
				return nil, fmt.Errorf("ops: registry of %s: %w", src.Name, err)
			}
			ms, err := consumerMappings(r, src.Name)
			if err != nil {
				return nil, err
			}
			out[src.Name] = PaymentsChecker{Registry: reg, Mappings: ms}
		case hasLedger && d.Ledger != nil:
			out[src.Name] = LedgerChecker{Ledger: d.Ledger}
		}
	}
	return out, nil
}

// consumerMappings reads the PAYMENT_MAPPINGS of a queue's consumer; nil
// when it has none.
func consumerMappings(r *Resolver, queue string) (*paymentworker.Mappings, error) {
	raw, ok := r.ConsumerVar(queue, "PAYMENT_MAPPINGS")
	if !ok || raw == "" {
		return nil, nil
	}
	ms, err := paymentworker.ParseMappings([]byte(raw))
	if err != nil {
		return nil, fmt.Errorf("ops: PAYMENT_MAPPINGS of %s's consumer: %w", queue, err)
	}
	return ms, nil
}
