package spend

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// Reader answers admission from the workloads table alone. It is what a
// read-only function needs: no ledger table, no pages, no routing keys.
type Reader struct{ c *Caps }

// NewReader builds a Reader over the workloads table that reads the time
// from now (nil: time.Now), as the workers that write the periods do: it
// decides which billing period admission answers.
func NewReader(db DB, workloadsTable string, now func() time.Time) (*Reader, error) {
	if db == nil || workloadsTable == "" {
		return nil, errors.New("spend: reader needs a DB and the workloads table")
	}
	if now == nil {
		now = time.Now
	}
	return &Reader{c: &Caps{&core{db: db, workloads: workloadsTable, metrics: noMetrics{}, log: slog.New(slog.DiscardHandler), now: now}}}, nil
}

// Admission is [Caps.Admission].
func (r *Reader) Admission(ctx context.Context, id string) (Admission, error) {
	return r.c.Admission(ctx, id)
}
