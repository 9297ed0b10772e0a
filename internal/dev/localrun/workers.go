package localrun

import (
	"cmp"
	"context"
	"fmt"
	"github.com/hookline/hookline/pkg/webhook/webhooktest"
	"time"

	"github.com/hookline/hookline/internal/dev/lambdalocal"
	"github.com/hookline/hookline/internal/dev/providersim"
)

func (s *System) startSim() error {
	cfg := s.cfg.Sim
	cfg.Now = s.now()
	sim, err := providersim.New(cfg)
	if err != nil {
		return fmt.Errorf("localrun: provider simulator: %w", err)
	}
	if err := sim.Start(); err != nil {
		return err
	}
	s.Sim = sim
	return nil
}

// startDoubles starts the doubles of the providers whose webhooks need
// a call back: Mollie's, PayPal's and GoCardless's APIs, which the
// payment worker fetches from, and PayPal's certificate host, which the
// receiver fetches from; and OpenMeter's face, which the reconciler reads
// with USAGE_EXPORT=openmeter or an openmeter sums source.
func (s *System) startDoubles() error {
	if err := s.startOpenMeter(); err != nil {
		return err
	}
	mollie, err := providersim.StartMollieAPI()
	if err != nil {
		return fmt.Errorf("localrun: mollie double: %w", err)
	}
	s.Mollie = mollie
	paypal, err := webhooktest.StartPayPalCertsOn(cmp.Or(s.cfg.PayPalCertsAddr, "127.0.0.1:0"))
	if err != nil {
		return fmt.Errorf("localrun: paypal certificate double: %w", err)
	}
	s.PayPal = paypal
	if s.PayPalAPI, err = providersim.StartPayPalAPI(); err != nil {
		return fmt.Errorf("localrun: paypal api double: %w", err)
	}
	if s.GoCardless, err = providersim.StartGoCardlessAPI(); err != nil {
		return fmt.Errorf("localrun: gocardless double: %w", err)
	}
	return nil
}

// StartWorkers runs every SQS event source the template declares. Start
// calls it unless Config.NoWorkers is set.
func (s *System) StartWorkers() error {
	ctx := s.runCtx
	s.Mappings = map[string]*lambdalocal.SQSMapping{}
	for _, es := range s.AWS.Template.EventSources {
		h, err := s.sqsHandler(es.Function)
		if err != nil {
			return err
		}
		fn, _ := s.AWS.Template.Function(es.Function)
		// Lambda polls an event source with the function's own role, so
		// the local AWS checks the poller's calls against its grants.
		_, poller := s.AWS.FunctionClients(es.Function)
		m, err := lambdalocal.NewSQSMapping(lambdalocal.SQSMappingConfig{
			SQS: poller, QueueURL: s.AWS.QueueURL(es.Queue), QueueARN: s.AWS.QueueARN(es.Queue),
			Function: es.Function, Handler: h, BatchSize: es.BatchSize,
			Concurrency:             min(max(es.MaxConcurrency, 1), s.maxConcurrency()),
			Timeout:                 time.Duration(fn.Timeout) * time.Second,
			ReportBatchItemFailures: contains(es.FunctionResponseTypes, "ReportBatchItemFailures"),
			DropAck:                 s.cfg.DropAck, Logger: s.cfg.Logger,
		})
		if err != nil {
			return err
		}
		s.Mappings[es.LogicalID] = m
		s.wg.Go(func() { m.Run(ctx) })
	}
	return nil
}

func (s *System) maxConcurrency() int {
	if s.cfg.MaxConcurrency > 0 {
		return s.cfg.MaxConcurrency
	}
	return 4
}

func contains(xs []string, v string) bool {
	for _, x := range xs {
		if x == v {
			return true
		}
	}
	return false
}

// sqsHandler builds the handler of a function that an event source feeds.
func (s *System) sqsHandler(function string) (lambdalocal.SQSHandler, error) {
	h, err := s.handler(function)
	if err != nil || h.SQS == nil {
		return nil, cmp.Or(err, fmt.Errorf("localrun: %s does not take SQS events", function))
	}
	return h.SQS, nil
}

// startSchedules fires every schedule the template declares at its rate,
// or at Config.ScheduleEvery when set, on the run's clock ([runSchedule]).
func (s *System) startSchedules(ctx context.Context) error {
	for _, sc := range s.AWS.Template.Schedules {
		h, err := s.scheduleHandler(sc.Function)
		if err != nil {
			return err
		}
		fn, _ := s.AWS.Template.Function(sc.Function)
		sched, err := lambdalocal.NewSchedule(lambdalocal.ScheduleConfig{
			Name: sc.LogicalID, Expression: sc.Expression, Function: sc.Function, Handler: h,
			Timeout: time.Duration(fn.Timeout) * time.Second, Every: s.cfg.ScheduleEvery, Logger: s.cfg.Logger,
		})
		if err != nil {
			return err
		}
		s.wg.Go(func() { s.runSchedule(ctx, sched, sc.LogicalID) })
	}
	return nil
}

// runSchedule fires sched every interval of the run's clock, as
// EventBridge fires a rate schedule, with the clock's time as the
// event's. A move of the clock past the next firing fires it at once,
// and once however many firings the move passed over: the reconciler
// reads from its cursor, so one run catches up.
func (s *System) runSchedule(ctx context.Context, sched *lambdalocal.Schedule, name string) {
	every := sched.Interval()
	next := s.clock.Now().Add(every)
	for {
		moved := s.clock.Moved()
		if wait := next.Sub(s.clock.Now()); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-moved:
				t.Stop()
				continue
			case <-t.C:
			}
		}
		if ctx.Err() != nil {
			return
		}
		at := s.clock.Now()
		if err := sched.Fire(ctx, at); err != nil {
			s.cfg.Logger.WarnContext(ctx, "scheduled invocation failed", "schedule", name, "err", err)
		}
		if next = next.Add(every); !next.After(at) {
			next = at.Add(every)
		}
	}
}

func (s *System) scheduleHandler(function string) (lambdalocal.ScheduleHandler, error) {
	h, err := s.handler(function)
	if err != nil || h.Schedule == nil {
		return nil, cmp.Or(err, fmt.Errorf("localrun: %s does not take schedule events", function))
	}
	return h.Schedule, nil
}

// startOpenMeter starts the simulator's OpenMeter face on a port of its
// own, on the run's clock, checking the key [providersim.OpenMeterAPIKey].
func (s *System) startOpenMeter() error {
	om := providersim.NewOpenMeter(providersim.OpenMeterConfig{Now: s.now(), APIKey: providersim.OpenMeterAPIKey,
		Logger: s.cfg.Sim.Logger})
	if err := om.Start(); err != nil {
		return fmt.Errorf("localrun: openmeter face: %w", err)
	}
	s.OpenMeter = om
	return nil
}
