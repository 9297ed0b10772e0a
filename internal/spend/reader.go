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

// NewReader builds a Reader over the workloads table.
func NewReader(db DB, workloadsTable string) (*Reader, error) {
	if db == nil || workloadsTable == "" {
		return nil, errors.New("spend: reader needs a DB and the workloads table")
	}
	return &Reader{c: &Caps{&core{db: db, workloads: workloadsTable, metrics: noMetrics{}, log: slog.New(slog.DiscardHandler), now: time.Now}}}, nil
}

// Admission is [Caps.Admission].
func (r *Reader) Admission(ctx context.Context, id string) (Admission, error) {
	return r.c.Admission(ctx, id)
}
