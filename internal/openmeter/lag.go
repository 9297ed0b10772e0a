package openmeter

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hookline/hookline/internal/emf"
	"github.com/hookline/hookline/internal/pager"
)

// MetricStoreLag is the largest ingest-to-store lag (storedAt −
// ingestedAt) of a listing's records, in seconds, with the Source
// dimension.
const MetricStoreLag = "OpenMeterStoreLag"

// lagKeeper holds the lag the reads reach back by: never less than the
// configured lag, raised to the largest lag seen, never lowered. It lives
// as long as the process; a cold start begins again at the configured
// lag.
type lagKeeper struct {
	mu    sync.Mutex
	kept  time.Duration
	paged time.Duration
}

func (k *lagKeeper) reach() time.Duration {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.kept
}

// raise keeps d (at most limit) when it is above the kept lag, and
// reports whether it grew.
func (k *lagKeeper) raise(d, limit time.Duration) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if d <= k.kept {
		return false
	}
	k.kept = min(d, limit)
	return true
}

// toPage reports whether lag d, past the configured lag, is above every
// lag paged before, and marks it paged.
func (k *lagKeeper) toPage(d, configured time.Duration) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if d <= configured || d <= k.paged {
		return false
	}
	k.paged = d
	return true
}

// Lag is the lag the client reaches back by now.
func (c *Client) Lag() time.Duration { return c.lag.reach() }

// noteLag measures a listing's largest lag, keeps it, and alarms when it
// grew: a log line, and a page when it is past the configured lag (once
// per whole minute of lag, so a lag that keeps growing pages again).
func (c *Client) noteLag(ctx context.Context, observed time.Duration) {
	_ = c.cfg.Metrics.Emit(MetricStoreLag, observed.Seconds(), emf.Seconds, emf.Dims{"Source": c.cfg.Source}, nil)
	reach := ceilSecond(time.Time{}.Add(observed)).Sub(time.Time{})
	if !c.lag.raise(reach, c.cfg.MaxLag) {
		return
	}
	c.cfg.Logger.WarnContext(ctx, "openmeter store lag grew: reads now reach back further", "source", c.cfg.Source,
		"lag", observed, "reach", c.lag.reach(), "configured", c.cfg.Lag, "max", c.cfg.MaxLag)
	if c.cfg.Pages == nil || !c.lag.toPage(observed.Truncate(time.Minute), c.cfg.Lag.Truncate(time.Minute)) {
		return
	}
	if _, err := c.cfg.Pages.Enqueue(ctx, c.lagPage(observed)); err != nil {
		c.cfg.Logger.WarnContext(ctx, "openmeter lag page not enqueued", "source", c.cfg.Source, "err", err)
	}
}

// LagLine is the page line of a store lag past the configured one.
func LagLine(source string, observed, configured, reach time.Duration) string {
	return fmt.Sprintf("openmeter store lag grew: source=%s lag=%s configured=%s reads_reach_back=%s",
		source, observed.Round(time.Second), configured, reach)
}

// LagDedupKey is the dedup key of the lag page: one per source and whole
// minute of lag.
func LagDedupKey(source string, observed time.Duration) string {
	return fmt.Sprintf("openmeter-lag#%s#%dm", source, int(observed/time.Minute))
}

func (c *Client) lagPage(observed time.Duration) pager.Event {
	return pager.Event{RoutingKey: c.cfg.RoutingKey, EventAction: pager.ActionTrigger,
		DedupKey: LagDedupKey(c.cfg.Source, observed),
		Payload: &pager.Payload{Summary: LagLine(c.cfg.Source, observed, c.cfg.Lag, c.lag.reach()),
			Source: "hookline-reconciler", Severity: pager.SeverityWarning, Class: "openmeter_lag",
			CustomDetails: map[string]any{"source": c.cfg.Source, "lag_seconds": observed.Seconds(),
				"configured": c.cfg.Lag.String(), "reach": c.lag.reach().String()}}}
}
