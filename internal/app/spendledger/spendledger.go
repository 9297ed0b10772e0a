package spendledger

import (
	"time"

	"github.com/hookline/hookline/internal/app"
	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/emf"
	"github.com/hookline/hookline/internal/pager"
	"github.com/hookline/hookline/internal/spend"
)

// Ledger is the spend ledger and the outbox its pages go through.
type Ledger struct {
	Spend  *spend.Spend
	Outbox *pager.Outbox
}

// New builds the spend ledger and its page outbox from cfg.
func New(d app.Deps, cfg config.Spend) (Ledger, error) {
	sender, err := pager.NewHTTPSender(pager.HTTPSenderConfig{URL: cfg.PagerURL})
	if err != nil {
		return Ledger{}, err
	}
	outbox, err := pager.NewOutbox(pager.OutboxConfig{DB: d.Clients.DynamoDB, Table: cfg.LedgerTable, Sender: sender, Logger: d.Log(), Now: d.Now})
	if err != nil {
		return Ledger{}, err
	}
	s, err := spend.New(spend.Config{
		DB: d.Clients.DynamoDB, LedgerTable: cfg.LedgerTable, WorkloadsTable: cfg.WorkloadsTable, Pages: outbox,
		Webhook:    spend.PathContract{ExpectedArrival: cfg.WebhookExpectedArrival, MaxAge: cfg.WebhookMaxAge, Interval: cfg.WebhookRetryInterval},
		Poll:       spend.PathContract{ExpectedArrival: cfg.PollExpectedArrival, MaxAge: cfg.PollMaxAge, Interval: cfg.PollInterval},
		ReconOwner: cfg.ReconOwner, ReconRoutingKey: cfg.ReconRoutingKey,
		Metrics: emfMetrics{d.EMF()}, Logger: d.Log(), Sums: cfg.Sums, Now: d.Now,
	})
	if err != nil {
		return Ledger{}, err
	}
	return Ledger{Spend: s, Outbox: outbox}, nil
}

// emfMetrics adapts an EMF logger to [spend.Metrics].
type emfMetrics struct{ m *emf.Logger }

func (e emfMetrics) Count(name string, n int64, dims map[string]string) {
	e.m.Count(name, float64(n), dims)
}

func (e emfMetrics) Duration(name string, d time.Duration, dims map[string]string) {
	e.m.Duration(name, d, dims)
}
