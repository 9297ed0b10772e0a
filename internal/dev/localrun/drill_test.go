package localrun_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/app/spendledger"
	"github.com/hookline/hookline/internal/dev/localrun"
	"github.com/hookline/hookline/internal/spend"
)

// drillSetup is what one drill's start differs in; drillOptions set it.
type drillSetup struct {
	cfg       localrun.Config
	env       map[string]string
	workloads []drillWorkload
}

// drillWorkload is a workload created before the drill begins, with the
// aliases (customers, projects, subjects) that resolve to it.
type drillWorkload struct {
	spend.NewWorkload
	aliases []string
}

// drillOption sets one thing a drill's start differs in.
type drillOption func(*drillSetup)

// env makes vars the run's whole environment; without it the run sees
// none.
func env(vars map[string]string) drillOption { return func(s *drillSetup) { s.env = vars } }

// everySecond makes the run's schedules (polls, sweeps) fire every
// second.
func everySecond() drillOption { return func(s *drillSetup) { s.cfg.ScheduleEvery = time.Second } }

// onClock makes clock the spend side's clock.
func onClock(clock *localrun.Clock) drillOption { return func(s *drillSetup) { s.cfg.Clock = clock } }

// noWorkers starts the run without its workers, for a test that starts
// them late.
func noWorkers() drillOption { return func(s *drillSetup) { s.cfg.NoWorkers = true } }

// withConfig sets anything else of the run's config; Addr and Lookup are
// the drill's.
func withConfig(set func(*localrun.Config)) drillOption {
	return func(s *drillSetup) { set(&s.cfg) }
}

// withPayments makes testdata/payments/provider-mappings.json the run's
// PAYMENT_MAPPINGS and certs the address it serves PayPal's certificates
// on (cert_hosts in its sources).
func withPayments(t *testing.T, certs string) drillOption {
	t.Helper()
	mappings, err := os.ReadFile("../../../testdata/payments/provider-mappings.json")
	if err != nil {
		t.Fatal(err)
	}
	return func(s *drillSetup) { s.cfg.PaymentMappings, s.cfg.PayPalCertsAddr = string(mappings), certs }
}

// workload creates w (owner "o" and routing key "rk" unless set) and its
// aliases once the run is up.
func workload(w spend.NewWorkload, aliases ...string) drillOption {
	if w.Owner == "" {
		w.Owner = "o"
	}
	if w.RoutingKey == "" {
		w.RoutingKey = "rk"
	}
	return func(s *drillSetup) { s.workloads = append(s.workloads, drillWorkload{w, aliases}) }
}

// startDrill starts a local run on a free port, stopped when the test
// ends, as opts say, creates their workloads, and returns the run and its
// ledger.
func startDrill(t *testing.T, opts ...drillOption) (*localrun.System, spendledger.Ledger) {
	t.Helper()
	var s drillSetup
	for _, o := range opts {
		o(&s)
	}
	sys := launch(t, s)
	ledger, err := sys.Ledger()
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range s.workloads {
		createWorkload(t, ledger, w.NewWorkload, w.aliases...)
	}
	return sys, ledger
}

// createWorkload creates w on ledger with its aliases.
func createWorkload(t *testing.T, ledger spendledger.Ledger, w spend.NewWorkload, aliases ...string) {
	t.Helper()
	ctx := context.Background()
	if _, err := ledger.Spend.Workloads.CreateWorkload(ctx, w); err != nil {
		t.Fatal(err)
	}
	for _, a := range aliases {
		if err := ledger.Spend.Workloads.AddAlias(ctx, a, w.ID); err != nil {
			t.Fatal(err)
		}
	}
}

// launch starts the run s describes, on a free port, stopped when the
// test ends.
func launch(t *testing.T, s drillSetup) *localrun.System {
	t.Helper()
	sys, err := tryLaunch(t, s)
	if err != nil {
		t.Fatal(err)
	}
	return sys
}

// tryLaunch is launch, returning the error of a run that did not start.
func tryLaunch(t *testing.T, s drillSetup) (*localrun.System, error) {
	t.Helper()
	s.cfg.Addr = "127.0.0.1:0"
	s.cfg.Lookup = func(k string) (string, bool) { v, ok := s.env[k]; return v, ok }
	sys, err := localrun.Start(context.Background(), s.cfg)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { sys.Close() })
	return sys, nil
}

// start starts a local run with cfg and no environment, as startDrill
// does without a ledger.
func start(t *testing.T, cfg localrun.Config) *localrun.System {
	t.Helper()
	return launch(t, drillSetup{cfg: cfg})
}

// withWorkload creates workload id (owner "o", routing key "rk", cap
// capUnits) on sys's ledger and returns the ledger, as a test sets one up.
func withWorkload(t *testing.T, sys *localrun.System, id string, capUnits int64) spendledger.Ledger {
	t.Helper()
	ledger, err := sys.Ledger()
	if err != nil {
		t.Fatal(err)
	}
	createWorkload(t, ledger, spend.NewWorkload{ID: id, Owner: "o", RoutingKey: "rk", Cap: capUnits})
	return ledger
}
