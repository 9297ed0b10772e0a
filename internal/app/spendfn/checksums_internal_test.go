package spendfn

import (
	"testing"

	"github.com/hookline/hookline/internal/app"
	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/sums"
)

// TestCheckSumsStartsWithLambdasClock: in Lambda the deps carry no clock
// (nil Now), and the start-up check of the sums sources' recorded state
// reads the real one; a source with no recorded state starts, and a
// ledger it cannot read refuses the start.
func TestCheckSumsStartsWithLambdasClock(t *testing.T) {
	env := localaws.StartForTest(t)
	srcs, err := sums.ParseSources(`{"stripe-test": {"provider": "stripe", "usage_source": "meters", "account": "acct_1",
		"start": "2026-11-30T00:00:00Z", "meters": {"api": {"provider_meter": "mtr_api", "aggregation": "sum"}}}}`)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.SpendWorker{Spend: config.Spend{LedgerTable: env.TableName("LedgerTable"), Sums: srcs}}
	d := app.Deps{Clients: app.Clients{DynamoDB: env.DynamoDB}}
	if err := checkSums(d, cfg); err != nil {
		t.Fatalf("a source with no recorded state: %v, want none", err)
	}
	cfg.LedgerTable = "no-such-table"
	if err := checkSums(d, cfg); err == nil {
		t.Fatalf("a ledger that cannot be read: %v, want an error", err)
	}
}
