package ops

import (
	"context"
	"time"
)

// Progress is the state of a long operation, for a progress line.
type Progress struct {
	// Done counts messages or records handled so far; Total is the expected
	// count, or 0 when unknown.
	Done    int
	Total   int
	Elapsed time.Duration
	// Rate is Done per second so far.
	Rate float64
	// ETA is the expected time left, or 0 when unknown.
	ETA time.Duration
}

// meter turns counts into [Progress] for a callback.
type meter struct {
	start time.Time
	total int
	now   func() time.Time
	fn    func(Progress)
}

func newMeter(now func() time.Time, total int, fn func(Progress)) *meter {
	return &meter{start: now(), total: total, now: now, fn: fn}
}

func (m *meter) report(done int) {
	if m.fn == nil {
		return
	}
	p := Progress{Done: done, Total: m.total, Elapsed: m.now().Sub(m.start)}
	if secs := p.Elapsed.Seconds(); secs > 0 {
		p.Rate = float64(done) / secs
	}
	if p.Total < done {
		p.Total = 0
	}
	if p.Total > 0 && p.Rate > 0 {
		p.ETA = time.Duration(float64(p.Total-done) / p.Rate * float64(time.Second))
	}
	m.fn(p)
}

// pacer spaces calls to at most rate per second; a zero rate never waits.
type pacer struct {
	interval time.Duration
	next     time.Time
}

func newPacer(rate float64) *pacer {
	if rate <= 0 {
		return &pacer{}
	}
	return &pacer{interval: time.Duration(float64(time.Second) / rate)}
}

// wait blocks until the next call is due, or ctx is done.
func (p *pacer) wait(ctx context.Context) error {
	if p.interval == 0 {
		return ctx.Err()
	}
	now := time.Now()
	if d := p.next.Sub(now); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		now = p.next
	}
	p.next = now.Add(p.interval)
	return ctx.Err()
}
