package app

import (
	"github.com/hookline/hookline/internal/admission"
	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/internal/spend"
	"github.com/hookline/hookline/internal/spendworker"
)

// NewSpendWorker builds the spend worker from its environment, behind
// the reader of the payloads its messages carry by reference
// ([readingPayloads]).
func NewSpendWorker(d Deps) (intake.SQSHandler, error) {
	cfg, err := config.SpendWorkerFromEnv(d.Lookup)
	if err != nil {
		return nil, err
	}
	ledger, err := NewLedger(d, cfg.Spend)
	if err != nil {
		return nil, err
	}
	q, err := newQueue(d, cfg.Worker)
	if err != nil {
		return nil, err
	}
	marks, err := intake.NewAttributions(d.Clients.DynamoDB, cfg.IntakeTable, nil)
	if err != nil {
		return nil, err
	}
	w, err := spendworker.New(spendworker.Config{
		Ledger: ledger.Spend.Ledger, Pages: ledger.Outbox, Queue: q, Concurrency: cfg.Concurrency,
		Metrics: d.metrics(), Logger: d.logger(), Attributions: marks,
		Sums: cfg.Sums, Workloads: ledger.Spend.Workloads, PollInterval: cfg.PollInterval, Now: d.Now,
	})
	if err != nil {
		return nil, err
	}
	return readingPayloads(d, cfg.IntakeTable, w.Handle)
}

// NewAdmission builds the admission endpoint from its environment: it
// reads the workloads table only (WORKLOADS_TABLE), matching its read-only
// IAM policy.
func NewAdmission(d Deps) (*admission.Handler, error) {
	table, err := config.AdmissionFromEnv(d.Lookup)
	if err != nil {
		return nil, err
	}
	r, err := spend.NewReader(d.Clients.DynamoDB, table)
	if err != nil {
		return nil, err
	}
	return admission.New(r, d.logger())
}
