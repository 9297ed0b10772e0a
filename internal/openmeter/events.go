package openmeter

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/hookline/hookline/internal/paced"
	"github.com/hookline/hookline/internal/reconcile"
	"github.com/hookline/hookline/internal/usagein"
	"github.com/hookline/hookline/pkg/provider"
)

// EventsPath is OpenMeter's per-record export.
const EventsPath = "/api/v2/events"

// Client is a [reconcile.Export] over OpenMeter's events. It is safe for
// concurrent use.
type Client struct {
	cfg    Config
	call   caller
	lag    *lagKeeper
	byType map[string]ExportSource
}

var _ reconcile.Export = (*Client)(nil)

// New returns a Client for cfg.
func New(cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.defaults()
	call, err := newCaller(cfg)
	if err != nil {
		return nil, err
	}
	return &Client{cfg: cfg, call: call, lag: &lagKeeper{kept: cfg.Lag}, byType: byType(cfg.sources())}, nil
}

// byType is each usage type's source.
func byType(srcs []ExportSource) map[string]ExportSource {
	out := map[string]ExportSource{}
	for _, src := range srcs {
		for _, t := range src.Mapping.UsageTypes {
			out[t] = src
		}
	}
	return out
}

// IngestedEvent is one item of GET /api/v2/events (the spec's
// IngestedEvent): the CloudEvent as the producer sent it, the customer it
// belongs to, and when OpenMeter ingested and stored it.
type IngestedEvent struct {
	Event           json.RawMessage `json:"event"`
	CustomerID      string          `json:"customerId,omitempty"`
	ValidationError string          `json:"validationError,omitempty"`
	IngestedAt      time.Time       `json:"ingestedAt"`
	StoredAt        time.Time       `json:"storedAt"`
}

// EventsPage is the answer of GET /api/v2/events (the spec's
// IngestedEventCursorPaginatedResponse).
type EventsPage struct {
	Items      []IngestedEvent `json:"items"`
	NextCursor string          `json:"nextCursor,omitempty"`
}

// WindowFilter is the filter parameter of a window [from, to) on
// ingestedAt: one operator per object, so an $and of a $gte and a $lt.
func WindowFilter(from, to time.Time) string {
	type op map[string]string
	f := map[string]map[string][]op{"ingestedAt": {"$and": {
		{"$gte": from.UTC().Format(time.RFC3339)}, {"$lt": to.UTC().Format(time.RFC3339)}}}}
	b, _ := json.Marshal(f) // maps of strings always encode
	return string(b)
}

// ListUsage reads every usage record OpenMeter ingested in [since, until),
// reaching back before since by the ingest-to-store lag it keeps, and
// hands the records to fn oldest first (by ingestedAt, then key), at most
// a page at a time. Times are whole seconds, so the window is read from
// since's second to the second after until's when until has a fraction.
// A record read twice in one listing (a page that changed under the
// cursor) is handed on once. A page that cannot be read is an
// [*provider.ExportError]; an error from fn stops the listing.
func (c *Client) ListUsage(ctx context.Context, since, until time.Time, fn func([]provider.UsageRecord) error) error {
	if !until.After(since) {
		return fmt.Errorf("%w: usage window [%s, %s) is empty", provider.ErrInvalidRequest,
			since.Format(time.RFC3339), until.Format(time.RFC3339))
	}
	from := since.Add(-c.lag.reach()).Truncate(time.Second)
	to := ceilSecond(until)
	l := &listing{c: c, seen: map[string]bool{}}
	for a := from; a.Before(to); a = a.Add(c.cfg.Step) {
		b := a.Add(c.cfg.Step)
		if b.After(to) {
			b = to
		}
		recs, err := l.window(ctx, a, b)
		if err != nil {
			return err
		}
		for part := range slices.Chunk(recs, c.cfg.PageLimit) {
			if err := fn(part); err != nil {
				return fmt.Errorf("openmeter: usage: %w", err)
			}
		}
	}
	c.noteLag(ctx, l.maxLag)
	return nil
}

func ceilSecond(t time.Time) time.Time {
	if s := t.Truncate(time.Second); !s.Equal(t) {
		return s.Add(time.Second)
	}
	return t
}

// listing is one ListUsage's state.
type listing struct {
	c      *Client
	pages  int
	seen   map[string]bool
	maxLag time.Duration
}

// window reads [a, b) to its last page and returns its new records oldest
// first.
func (l *listing) window(ctx context.Context, a, b time.Time) ([]provider.UsageRecord, error) {
	limit := l.c.cfg.PageLimit
	q := url.Values{"limit": {strconv.Itoa(limit)}, "filter": {WindowFilter(a, b)}}
	walk := paced.NewWalk(provider.MaxUsagePages - l.pages)
	var out []provider.UsageRecord
	for {
		var pg EventsPage
		attempts, err := l.c.call.get(ctx, EventsPath, EventsPath, q, &pg)
		l.pages++
		if err == nil {
			err = checkPage(pg, limit)
		}
		if err == nil && pg.NextCursor != "" {
			if werr := walk.Next(pg.NextCursor); werr != nil {
				err = fmt.Errorf("%w: %w: %w", ErrBadResponse, provider.ErrPageLoop, werr)
			}
		}
		if err != nil {
			return nil, &provider.ExportError{Page: l.pages, StatusCode: statusOf(err), Attempts: attempts, Err: err}
		}
		for _, ev := range pg.Items {
			l.observe(ev)
			if rec, ok := l.c.record(ev); ok && !l.seen[rec.RecordID] {
				l.seen[rec.RecordID] = true
				out = append(out, rec)
			}
		}
		if pg.NextCursor == "" {
			break
		}
		q.Set("cursor", pg.NextCursor)
	}
	slices.SortFunc(out, func(x, y provider.UsageRecord) int {
		return cmp.Or(x.PublishedAt.Compare(y.PublishedAt), cmp.Compare(x.RecordID, y.RecordID))
	})
	return out, nil
}

// checkPage refuses a page the spec does not allow: more items than asked
// for, or a full page without a cursor (the listing could not go on, and
// would end silently short). A cursor already followed in the window, or
// more than [provider.MaxUsagePages] pages in the listing, is the walk's
// ([paced.Walk]).
func checkPage(pg EventsPage, limit int) error {
	switch {
	case len(pg.Items) > limit:
		return fmt.Errorf("%w: %d items, asked for at most %d", ErrBadResponse, len(pg.Items), limit)
	case len(pg.Items) == limit && pg.NextCursor == "":
		return fmt.Errorf("%w: a full page of %d without nextCursor", ErrBadResponse, limit)
	}
	return nil
}

func statusOf(err error) int {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Status
	}
	return 0
}

// observe measures one record's ingest-to-store lag.
func (l *listing) observe(ev IngestedEvent) {
	if ev.StoredAt.IsZero() || ev.IngestedAt.IsZero() {
		return
	}
	l.maxLag = max(l.maxLag, ev.StoredAt.Sub(ev.IngestedAt))
}

// record is an event as the ledger takes it from the poll: read by the
// mapping of the source whose usage_types name its type (Source's when
// none does) exactly as the door reads it on that source (its key, meter,
// scale and unit too, so that it counts in the bucket the webhook would),
// published when OpenMeter ingested it. An event the door acknowledges
// without counting (another type, a zero value) is no record (ok false);
// one the door would refuse comes back with Invalid set, for the
// reconciler to quarantine.
func (c *Client) record(ev IngestedEvent) (provider.UsageRecord, bool) {
	src := c.sourceOf(ev.Event)
	it := src.Mapping.ReadStoredEvent(ev.Event, src.Name, ev.IngestedAt)
	rec := provider.UsageRecord{RecordID: it.EventID, WorkloadRef: it.Record.WorkloadRef, Units: it.Record.Units,
		OccurredAt: cmp.Or(it.Record.OccurredAt, ev.IngestedAt), PublishedAt: ev.IngestedAt,
		Source: src.Name, Meter: it.Record.Meter, Unit: it.Record.Unit}
	if it.Err == nil && it.Record.Outcome != usagein.OutcomeUsage {
		return rec, false
	}
	if it.Err == nil && c.cfg.Workload == WorkloadCustomer {
		rec.WorkloadRef = ev.CustomerID
		if ev.CustomerID == "" {
			it.Err = &provider.FieldError{Field: "customerId", Reason: "the event belongs to no customer"}
		}
	}
	if it.Err != nil {
		fe, ok := provider.AsFieldError(it.Err)
		if !ok {
			fe = &provider.FieldError{Reason: it.Err.Error()}
		}
		rec.Invalid = fe
		if rec.RecordID == "" {
			h := sha256.Sum256(ev.Event)
			rec.RecordID = "invalid-" + hex.EncodeToString(h[:])[:32]
		}
	}
	return rec, true
}

// sourceOf is the source whose mapping names event's type as usage, or
// [Config.Source] when none does (or the event cannot be read): its
// mapping then says what the door would make of the event.
func (c *Client) sourceOf(event json.RawMessage) ExportSource {
	var head struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(event, &head) == nil {
		if src, ok := c.byType[head.Type]; ok {
			return src
		}
	}
	return ExportSource{Name: c.cfg.Source, Mapping: c.cfg.Mapping}
}
