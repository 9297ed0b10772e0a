package spendfn

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/hookline/hookline/internal/app"
	"github.com/hookline/hookline/internal/app/spendledger"
	"github.com/hookline/hookline/internal/app/worker"
	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/internal/reconcile"
	"github.com/hookline/hookline/internal/spendworker"
)

// Function is the spend worker, invoked by its queue's event source.
var Function = app.Function{Name: "spend-worker", Clients: func(cfg aws.Config) app.Clients {
	return app.QueueClients(cfg, sqs.NewFromConfig(cfg))
}, Build: func(d app.Deps) (app.Handler, error) {
	return app.Built(d, New, func(h intake.SQSHandler) app.Handler { return app.Handler{SQS: h} })
}}

// New builds the spend worker from its environment, behind the reader of
// the payloads its messages carry by reference
// ([worker.ReadingPayloads]).
func New(d app.Deps) (intake.SQSHandler, error) {
	cfg, err := config.SpendWorkerFromEnv(d.Lookup)
	if err != nil {
		return nil, err
	}
	if err := checkSums(d, cfg); err != nil {
		return nil, err
	}
	ledger, err := spendledger.New(d, cfg.Spend)
	if err != nil {
		return nil, err
	}
	q, err := worker.Queue(d, cfg.Worker)
	if err != nil {
		return nil, err
	}
	marks, err := intake.NewAttributions(d.Clients.DynamoDB, cfg.IntakeTable, d.Now)
	if err != nil {
		return nil, err
	}
	w, err := spendworker.New(spendworker.Config{
		Ledger: ledger.Spend.Ledger, Pages: ledger.Outbox, Queue: q, Concurrency: cfg.Concurrency,
		Metrics: d.EMF(), Logger: d.Log(), Attributions: marks,
		Sums: cfg.Sums, Workloads: ledger.Spend.Workloads, Alerts: ledger.Spend.Buckets, PollInterval: cfg.PollInterval, Now: d.Now,
	})
	if err != nil {
		return nil, err
	}
	return worker.ReadingPayloads(d, cfg.IntakeTable, w.Handle)
}

// checkSums refuses to start under a sums configuration its sources'
// recorded state cannot follow ([reconcile.CheckSources]): a width
// changed without a stated boundary, or a start moved earlier, would
// have this worker bucket records that the runs then refuse to read,
// and a late record could count twice. Messages wait in the queue until
// the configuration is put back.
func checkSums(d app.Deps, cfg config.SpendWorker) error {
	if len(cfg.Sums) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	now := time.Now
	if d.Now != nil { // a local run's clock; Lambda reads the real one
		now = d.Now
	}
	return reconcile.CheckSources(ctx, d.Clients.DynamoDB, cfg.Spend.LedgerTable, cfg.Sums, now())
}
