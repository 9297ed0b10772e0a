package reconcile_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/pager"
	"github.com/hookline/hookline/internal/reconcile"
	"github.com/hookline/hookline/internal/spend"
	"github.com/hookline/hookline/pkg/provider"
)

type nopExport struct{}

func (nopExport) ListUsage(context.Context, time.Time, time.Time, func([]provider.UsageRecord) error) error {
	return nil
}

type nopPages struct{}

func (nopPages) Enqueue(context.Context, pager.Event) (bool, error) { return true, nil }

type nopDB struct{ reconcile.DB }

// nopSpend has the roles the export reconciler needs, none of them usable.
func nopSpend() *spend.Spend {
	return &spend.Spend{Workloads: &spend.Workloads{}, Caps: &spend.Caps{}, Ledger: &spend.Ledger{}, Recon: &spend.Recon{}}
}

func TestConfigValidate(t *testing.T) {
	valid := reconcile.Config{Spend: nopSpend(), Export: nopExport{}, DB: nopDB{}, Table: "ledger",
		Pages: nopPages{}, ReconRoutingKey: "rk"}
	tests := []struct {
		name   string
		change func(*reconcile.Config)
		ok     bool
	}{
		{"defaults", func(*reconcile.Config) {}, true},
		{"no route", func(c *reconcile.Config) { c.ReconRoutingKey = "" }, false},
		{"no export", func(c *reconcile.Config) { c.Export = nil }, false},
		{"no spend", func(c *reconcile.Config) { c.Spend = nil }, false},
		{"no registry", func(c *reconcile.Config) {
			c.Spend = &spend.Spend{Caps: &spend.Caps{}, Ledger: &spend.Ledger{}, Recon: &spend.Recon{}}
		}, false},
		{"no caps", func(c *reconcile.Config) {
			c.Spend = &spend.Spend{Workloads: &spend.Workloads{}, Ledger: &spend.Ledger{}, Recon: &spend.Recon{}}
		}, false},
		{"no table", func(c *reconcile.Config) { c.Table = "" }, false},
		{"ratio above one", func(c *reconcile.Config) { c.NearCapRatio = 1.5 }, false},
		{"quiet shorter than active", func(c *reconcile.Config) { c.QuietInterval = time.Minute * 10 }, false},
		{"horizon within lag", func(c *reconcile.Config) { c.Horizon = time.Minute }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Given a config with one change
			cfg := valid
			tc.change(&cfg)

			// When it is validated
			err := cfg.Validate()

			// Then only a sound config passes, and a bad one names the package
			if (err == nil) != tc.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, reconcile.ErrInvalidConfig) {
				t.Fatalf("err = %v, want ErrInvalidConfig", err)
			}
		})
	}
}

func TestUnresolvedSummary(t *testing.T) {
	// Given an amount, the oldest record's time in another zone and a count
	oldest := time.Date(2026, 11, 30, 4, 17, 0, 0, time.FixedZone("CET", 3600))

	// When the summary is built, then it is the exact one-line form in UTC
	got := reconcile.UnresolvedSummary(1012, oldest, 3)
	if want := "unresolved attribution amount=1012 oldest=2026-11-30T03:17:00Z records=3"; got != want {
		t.Fatalf("summary = %q, want %q", got, want)
	}
}
