package lambdalocal

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// ScheduleHandler is a Lambda handler invoked by an EventBridge schedule.
type ScheduleHandler func(context.Context, events.EventBridgeEvent) error

// ScheduleConfig configures a [Schedule].
type ScheduleConfig struct {
	Name       string
	Expression string // "rate(5 minutes)"
	Function   string
	Handler    ScheduleHandler
	Timeout    time.Duration
	// Every overrides the rate (for local walk-throughs); 0 keeps it.
	Every  time.Duration
	Logger *slog.Logger
}

// Schedule invokes a handler at the rate its expression declares.
type Schedule struct {
	cfg   ScheduleConfig
	every time.Duration
}

// NewSchedule parses the expression and builds the schedule.
func NewSchedule(cfg ScheduleConfig) (*Schedule, error) {
	every, err := ParseRate(cfg.Expression)
	if err != nil {
		return nil, err
	}
	if cfg.Every > 0 {
		every = cfg.Every
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Schedule{cfg: cfg, every: every}, nil
}

// Interval is the time between invocations.
func (s *Schedule) Interval() time.Duration { return s.every }

// ParseRate parses "rate(N minute|minutes|hour|hours|day|days)".
func ParseRate(expr string) (time.Duration, error) {
	inner, ok := strings.CutPrefix(strings.TrimSpace(expr), "rate(")
	inner, ok2 := strings.CutSuffix(inner, ")")
	if !ok || !ok2 {
		return 0, fmt.Errorf("lambdalocal: %q is not a rate() expression", expr)
	}
	fields := strings.Fields(inner)
	if len(fields) != 2 {
		return 0, fmt.Errorf("lambdalocal: bad rate %q", expr)
	}
	n, err := strconv.Atoi(fields[0])
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("lambdalocal: bad rate value in %q", expr)
	}
	unit := map[string]time.Duration{"minute": time.Minute, "minutes": time.Minute, "hour": time.Hour, "hours": time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour}[fields[1]]
	if unit == 0 {
		return 0, fmt.Errorf("lambdalocal: bad rate unit in %q", expr)
	}
	return time.Duration(n) * unit, nil
}

// Run fires the handler every interval until ctx ends.
func (s *Schedule) Run(ctx context.Context) {
	t := time.NewTicker(s.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if err := s.Fire(ctx, now); err != nil {
				s.cfg.Logger.WarnContext(ctx, "scheduled invocation failed", "schedule", s.cfg.Name, "err", err)
			}
		}
	}
}

// Fire invokes the handler once, as the scheduler would at time at.
func (s *Schedule) Fire(ctx context.Context, at time.Time) error {
	ictx, cancel := InvokeContext(ctx, s.cfg.Function, s.cfg.Timeout)
	defer cancel()
	ev := events.EventBridgeEvent{
		Version:    "0",
		ID:         NewRequestID(),
		DetailType: "Scheduled Event",
		Source:     "aws.scheduler",
		AccountID:  LocalAccountID,
		Time:       at.UTC(),
		Region:     "us-east-1",
		Resources:  []string{"arn:aws:scheduler:us-east-1:" + LocalAccountID + ":schedule/default/" + s.cfg.Name},
		Detail:     json.RawMessage(`{}`),
	}
	var err error
	if !runWithDeadline(ictx, func() { err = s.cfg.Handler(ictx, ev) }) {
		return fmt.Errorf("lambdalocal: %s timed out after %s", s.cfg.Function, s.cfg.Timeout)
	}
	return err
}
