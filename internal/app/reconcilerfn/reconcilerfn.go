package reconcilerfn

import (
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/hookline/hookline/internal/app"
	"github.com/hookline/hookline/internal/app/spendledger"
	"github.com/hookline/hookline/internal/awsenv"
	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/reconcile"
)

// Function is the reconciler, invoked on its schedule.
var Function = app.Function{Name: "reconciler",
	Clients: func(cfg aws.Config) app.Clients {
		return app.Clients{DynamoDB: awsenv.DynamoDB(cfg, ""), SecretsManager: awsenv.SecretsManager(cfg)}
	},
	Build: func(d app.Deps) (app.Handler, error) {
		return app.Built(d, New, func(r *reconcile.Reconciler) app.Handler { return app.Handler{Schedule: r.Handle} })
	}}

// New builds the scheduled reconciler from its environment.
func New(d app.Deps) (*reconcile.Reconciler, error) {
	cfg, err := config.ReconcilerFromEnv(d.Lookup)
	if err != nil {
		return nil, err
	}
	ledger, err := spendledger.New(d, cfg.Spend)
	if err != nil {
		return nil, err
	}
	client, err := newExport(d, cfg, ledger)
	if err != nil {
		return nil, err
	}
	sumsRec, err := newSums(d, cfg, ledger)
	if err != nil {
		return nil, err
	}
	return reconcile.New(reconcile.Config{Sums: sumsRec,
		Spend: ledger.Spend, Export: client, DB: d.Clients.DynamoDB, Table: cfg.LedgerTable,
		Pages: ledger.Outbox, Flush: ledger.Outbox, ReconRoutingKey: cfg.ReconRoutingKey,
		Overlap: cfg.Overlap, Lag: cfg.Lag, Horizon: cfg.Horizon, InitialLookback: cfg.InitialLookback,
		BaseInterval: cfg.PollInterval, ActiveInterval: cfg.ActiveInterval, QuietInterval: cfg.QuietInterval,
		QuietAfter: cfg.QuietAfter, NearCapRatio: cfg.NearCapRatio, Concurrency: cfg.FoldConcurrency,
		ExportMaxAge: cfg.ExportRule.MaxAge, ExportMaxSkew: cfg.ExportRule.MaxSkew,
		Metrics: d.EMF().With(map[string]any{"function": "reconciler"}), Logger: d.Log(), Now: d.Now,
	})
}

// newSums builds the reconciler of the providers of sums (SUM_SOURCES), or
// nil when there are none. Each source reads through its provider's
// adapter, and the sources of one provider through one paced client
// ([sumReaders]).
func newSums(d app.Deps, cfg config.Reconciler, ledger spendledger.Ledger) (*reconcile.Sums, error) {
	if len(cfg.Sums) == 0 {
		return nil, nil
	}
	readers, err := sumReaders(d, cfg)
	if err != nil {
		return nil, err
	}
	return reconcile.NewSums(reconcile.SumsConfig{Spend: ledger.Spend,
		Sources: cfg.Sums, Readers: readers, DB: d.Clients.DynamoDB, Table: cfg.LedgerTable, Flush: ledger.Outbox,
		Metrics: d.EMF().With(map[string]any{"function": "reconciler"}), Logger: d.Log(), Now: d.Now})
}
