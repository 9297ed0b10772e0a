package providersim

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/hookline/hookline/pkg/provider"
)

// WebhookMode says what happens to the webhook of a usage record.
type WebhookMode int

// Webhook modes.
const (
	// WebhookDefault sends the webhook, or drops it with probability
	// [Config.UsageDropRate].
	WebhookDefault WebhookMode = iota
	// WebhookSend always sends the webhook.
	WebhookSend
	// WebhookDrop never sends it: only the export knows the record.
	WebhookDrop
	// WebhookAltered sends a webhook whose units are
	// [UsageOptions.WebhookUnits] instead of the export's.
	WebhookAltered
)

func (m WebhookMode) String() string {
	switch m {
	case WebhookSend:
		return "send"
	case WebhookDrop:
		return "drop"
	case WebhookAltered:
		return "altered"
	default:
		return "default"
	}
}

// UsageOptions shape one usage record added with [UsageFeed.AddUsage].
type UsageOptions struct {
	// PublishDelay sets published_at to occurred_at + PublishDelay when the
	// record carries no published_at. The record is exported only once the
	// simulator's clock reaches published_at.
	PublishDelay time.Duration
	// Webhook says whether the record's webhook is sent, dropped or altered.
	Webhook WebhookMode
	// WebhookUnits are the units sent with [WebhookAltered].
	WebhookUnits int64
	// ExportJSON, if set, is the JSON object the export serves for the
	// record in place of its encoding: a record given twice a member, or
	// units of 1.5. The record's published_at and record_id still place it.
	ExportJSON string
}

// ExportFault makes usage export requests fail.
type ExportFault struct {
	// Page is the 1-based page number to fail; 0 fails any page.
	Page int
	// Times is how many requests fail; -1 fails every one.
	Times int
	// Status is the answer. Default 503.
	Status int
}

type usageEntry struct {
	rec     provider.UsageRecord
	mode    WebhookMode     // never WebhookDefault once stored
	units   int64           // units of the webhook
	raw     json.RawMessage // what the export serves, if not rec
	emitted bool
}

// usageBook holds usage records and export faults.
type usageBook struct {
	mu       sync.Mutex
	entries  []*usageEntry // sorted by (published_at, record_id) unless dirty
	byID     map[string]*usageEntry
	dirty    bool
	faults   []ExportFault
	requests int
}

func (b *usageBook) init() { b.byID = make(map[string]*usageEntry) }

// AddUsage adds a usage record. RecordID, WorkloadRef and OccurredAt are
// required and RecordID must be new.
func (s *core) AddUsage(rec provider.UsageRecord, opts UsageOptions) error {
	var errs []error
	if rec.RecordID == "" {
		errs = append(errs, errors.New("record_id is empty"))
	}
	if rec.WorkloadRef == "" {
		errs = append(errs, errors.New("workload_ref is empty"))
	}
	if rec.OccurredAt.IsZero() {
		errs = append(errs, errors.New("occurred_at is zero"))
	}
	if opts.PublishDelay < 0 {
		errs = append(errs, errors.New("publish delay is negative"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidUsage, errors.Join(errs...))
	}
	if rec.PublishedAt.IsZero() {
		rec.PublishedAt = rec.OccurredAt.Add(opts.PublishDelay)
	}
	rec.OccurredAt, rec.PublishedAt = rec.OccurredAt.UTC(), rec.PublishedAt.UTC()
	e := &usageEntry{rec: rec, mode: opts.Webhook, units: rec.Units}
	if opts.ExportJSON != "" {
		if !json.Valid([]byte(opts.ExportJSON)) {
			return fmt.Errorf("%w: export JSON of %s is not JSON", ErrInvalidUsage, rec.RecordID)
		}
		e.raw = json.RawMessage(opts.ExportJSON)
	}
	switch opts.Webhook {
	case WebhookDefault:
		e.mode = WebhookSend
		if s.dropRate > 0 && s.float() < s.dropRate {
			e.mode = WebhookDrop
		}
	case WebhookAltered:
		e.units = opts.WebhookUnits
	}
	b := &s.usage
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.byID[rec.RecordID]; ok {
		return fmt.Errorf("%w: record %s exists", ErrInvalidUsage, rec.RecordID)
	}
	b.byID[rec.RecordID] = e
	if n := len(b.entries); n > 0 && !b.dirty && compareEntries(b.entries[n-1], e) > 0 {
		b.dirty = true
	}
	b.entries = append(b.entries, e)
	return nil
}

// Usage returns every record, visible or not, in export order.
func (s *core) Usage() []provider.UsageRecord {
	b := &s.usage
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sortLocked()
	out := make([]provider.UsageRecord, len(b.entries))
	for i, e := range b.entries {
		out[i] = e.rec
	}
	return out
}

// FailExport programs export failures, after any programmed before.
func (s *core) FailExport(f ExportFault) {
	s.usage.mu.Lock()
	defer s.usage.mu.Unlock()
	s.usage.faults = append(s.usage.faults, f)
}

// ExportRequests returns how many export requests arrived.
func (s *core) ExportRequests() int {
	s.usage.mu.Lock()
	defer s.usage.mu.Unlock()
	return s.usage.requests
}

func compareEntries(a, b *usageEntry) int {
	if c := a.rec.PublishedAt.Compare(b.rec.PublishedAt); c != 0 {
		return c
	}
	return cmp.Compare(a.rec.RecordID, b.rec.RecordID)
}

func (b *usageBook) sortLocked() {
	if b.dirty {
		slices.SortFunc(b.entries, compareEntries)
		b.dirty = false
	}
}

// exportFaultLocked returns the status to fail a request for page with, or 0.
func (b *usageBook) exportFaultLocked(page int) int {
	for i := range b.faults {
		f := &b.faults[i]
		if f.Times == 0 || (f.Page != 0 && f.Page != page) {
			continue
		}
		if f.Times > 0 {
			f.Times--
		}
		if f.Status == 0 {
			return http.StatusServiceUnavailable
		}
		return f.Status
	}
	return 0
}

// pageToken is the decoded form of the opaque export page token: the page
// number it leads to and the last record of the page before.
type pageToken struct {
	Page      int    `json:"p"`
	Published int64  `json:"t"`
	RecordID  string `json:"id"`
}

func encodeToken(t pageToken) string {
	data, _ := json.Marshal(t)
	return base64.RawURLEncoding.EncodeToString(data)
}

func decodeToken(s string) (pageToken, error) {
	data, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return pageToken{}, err
	}
	var t pageToken
	if err := json.Unmarshal(data, &t); err != nil {
		return pageToken{}, err
	}
	if t.Page < 2 {
		return pageToken{}, errors.New("bad page")
	}
	return t, nil
}

// exportQuery is one parsed GET /v1/usage.
type exportQuery struct {
	since, until time.Time
	limit        int
	token        *pageToken
}

func (s *core) parseExport(r *http.Request) (exportQuery, string) {
	q := r.URL.Query()
	var x exportQuery
	var err error
	if x.since, err = time.Parse(time.RFC3339Nano, q.Get("since")); err != nil {
		return x, "since must be an RFC 3339 time"
	}
	if x.until, err = time.Parse(time.RFC3339Nano, q.Get("until")); err != nil {
		return x, "until must be an RFC 3339 time"
	}
	x.limit = s.pageSize
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxUsagePageSize {
			return x, fmt.Sprintf("limit must lie in [1, %d]", MaxUsagePageSize)
		}
		x.limit = n
	}
	if v := q.Get("page_token"); v != "" {
		t, err := decodeToken(v)
		if err != nil {
			return x, "page_token is invalid"
		}
		x.token = &t
	}
	return x, ""
}

func (s *core) handleUsage(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	x, bad := s.parseExport(r)
	if bad != "" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "parameter_invalid", bad)
		return
	}
	page := 1
	if x.token != nil {
		page = x.token.Page
	}
	now := s.now()
	b := &s.usage
	b.mu.Lock()
	b.requests++
	if status := b.exportFaultLocked(page); status != 0 {
		b.mu.Unlock()
		writeError(w, status, "api_error", "injected", "injected export failure")
		return
	}
	b.sortLocked()
	out := s.exportPageLocked(x, page, now)
	b.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

// exportPage is the export's page as served: each record as its entry's
// ExportJSON, or encoded.
type exportPage struct {
	Records       []json.RawMessage `json:"records"`
	NextPageToken string            `json:"next_page_token,omitempty"`
}

// exportPageLocked selects one page of records.
func (s *core) exportPageLocked(x exportQuery, page int, now time.Time) exportPage {
	entries := s.usage.entries
	start := 0
	if x.token != nil {
		after := &usageEntry{rec: provider.UsageRecord{
			PublishedAt: time.Unix(0, x.token.Published), RecordID: x.token.RecordID,
		}}
		start, _ = slices.BinarySearchFunc(entries, after, compareEntries)
		if start < len(entries) && compareEntries(entries[start], after) == 0 {
			start++
		}
	} else {
		start, _ = slices.BinarySearchFunc(entries, x.since, func(e *usageEntry, t time.Time) int {
			if e.rec.PublishedAt.Before(t) {
				return -1
			}
			return 1
		})
	}
	visible := func(e *usageEntry) bool {
		p := e.rec.PublishedAt
		return !p.Before(x.since) && p.Before(x.until) && !p.After(now)
	}
	pg := exportPage{Records: []json.RawMessage{}}
	var last provider.UsageRecord
	i := start
	for ; i < len(entries) && len(pg.Records) < x.limit; i++ {
		if entries[i].rec.PublishedAt.Before(x.since) {
			continue // a token from a query with an earlier since
		}
		if !visible(entries[i]) {
			break // sorted by published_at: nothing later is visible
		}
		raw := entries[i].raw
		if raw == nil {
			raw, _ = json.Marshal(entries[i].rec)
		}
		pg.Records = append(pg.Records, raw)
		last = entries[i].rec
	}
	if i < len(entries) && len(pg.Records) == x.limit && visible(entries[i]) {
		pg.NextPageToken = encodeToken(pageToken{
			Page: page + 1, Published: last.PublishedAt.UnixNano(), RecordID: last.RecordID,
		})
	}
	return pg
}
