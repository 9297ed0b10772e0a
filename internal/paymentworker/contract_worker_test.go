package paymentworker_test

import (
	"testing"
	"time"

	"github.com/hookline/hookline/internal/paymentworker"
	"github.com/hookline/hookline/pkg/idempotency"
	"github.com/hookline/hookline/pkg/provider"
)

// contractHorizon is the simulator's settle horizon in the contract
// drills: its slowest commit plus its lookup lag.
const contractHorizon = contractCommit + contractLookupLag

// contractWorker builds the registry and worker the contract drills run,
// wired as the application wires them: the registry's deadline margin
// covers the provider's horizon and the clock skew.
func contractWorker(t *testing.T, store idempotency.Store, client *provider.Client, q paymentworker.Queue) (*idempotency.Registry, *paymentworker.Worker) {
	t.Helper()
	const skew = 100 * time.Millisecond
	reg, err := idempotency.New(idempotency.Config{Store: store, Namespace: "payments", InProgressTimeout: 3 * time.Second, DeadlineMargin: contractHorizon + skew})
	must(t, err)
	w, err := paymentworker.New(paymentworker.Config{Registry: reg, Provider: client, Queue: q, RetryBase: 100 * time.Millisecond, Horizon: contractHorizon, ClockSkew: skew})
	must(t, err)
	return reg, w
}
