package providersim

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// OpenMeterAPIKey is the key a local run's face checks and its reconciler
// sends (OPENMETER_API_KEY), unless they are set.
const OpenMeterAPIKey = "om_local_key"

// OpenMeterConfig configures [NewOpenMeter].
type OpenMeterConfig struct {
	// Now is the face's clock: an event is readable once Now reaches its
	// storedAt. Default time.Now. See [ManualClock].
	Now func() time.Time
	// APIKey, when set, must arrive as a bearer token, or the answer is
	// 401.
	APIKey string
	// StoreLag is how long after ingest an event is stored (readable).
	StoreLag time.Duration
	// Logger receives a line per refused request. Default: discard.
	Logger *slog.Logger
}

// OpenMeter is the simulator's OpenMeter face: GET /api/v2/events and
// GET /api/v1/meters/{slug}/query as OpenMeter's spec (api/openapi.yaml)
// defines them, over events ingested through [OpenMeter.Ingest] or POST
// /sim/openmeter/events, with faults: a lag between ingest and store,
// events that appear between two pages of one listing, events stored
// late, and the fault vocabulary's 429s (with Retry-After) and 5xx
// ([OpenMeter.FailCalls]). It serves on a port of its own. It is safe for
// concurrent use.
type OpenMeter struct {
	now    func() time.Time
	apiKey string
	log    *slog.Logger
	faults *usageFaults // lag and calls

	mu       sync.Mutex
	events   []*omEvent
	rows     int
	meters   map[string]OpenMeterMeter
	between  []*omEvent // stored when a listing asks for a page after its first
	late     []*omEvent // ingested by IngestLate, not yet stored
	calls    map[string]int
	refusals []string

	srvMu sync.Mutex
	srv   *http.Server
	url   string
}

// omEvent is one ingested event.
type omEvent struct {
	raw                  json.RawMessage
	ev                   UsageCloudEvent
	customerID           string
	ingestedAt, storedAt time.Time
	row                  string
}

// OpenMeterMeter is a meter of the face: the events of EventType, summed
// (their data.value) or counted.
type OpenMeterMeter struct {
	Slug        string `json:"slug"`
	EventType   string `json:"event_type"`
	Aggregation string `json:"aggregation"` // SUM or COUNT
}

// NewOpenMeter returns the face; it serves nothing until [OpenMeter.Start]
// or until its [OpenMeter.Handler] is mounted.
func NewOpenMeter(cfg OpenMeterConfig) *OpenMeter {
	o := &OpenMeter{now: cfg.Now, apiKey: cfg.APIKey, log: cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler)),
		faults: newUsageFaults(faultLag|faultCalls, 0, DefaultOpenMeterRetryAfter, 0, omEvents, omMeterQuery),
		meters: map[string]OpenMeterMeter{}, calls: map[string]int{}}
	o.faults.setLag("", cfg.StoreLag)
	if o.now == nil {
		o.now = time.Now
	}
	return o
}

// Start serves on a free port of 127.0.0.1 in the background. Stop it with
// [OpenMeter.Close].
func (o *OpenMeter) Start() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("providersim: openmeter: listen: %w", err)
	}
	o.srvMu.Lock()
	defer o.srvMu.Unlock()
	if o.srv != nil {
		ln.Close()
		return ErrStarted
	}
	o.srv = &http.Server{Handler: o.Handler(), ReadHeaderTimeout: 10 * time.Second}
	o.url = "http://" + ln.Addr().String()
	go serve(o.srv, ln)
	return nil
}

// URL is the base URL once started.
func (o *OpenMeter) URL() string {
	o.srvMu.Lock()
	defer o.srvMu.Unlock()
	return o.url
}

// Close stops the server.
func (o *OpenMeter) Close() error {
	o.srvMu.Lock()
	defer o.srvMu.Unlock()
	if o.srv == nil {
		return nil
	}
	return o.srv.Close()
}

// Handler returns the face's routes: OpenMeter's API and its
// administration under [OpenMeterSimPath].
func (o *OpenMeter) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v2/events", o.handleEvents)
	mux.HandleFunc("GET /api/v1/meters/{slug}/query", o.handleMeterQuery)
	o.adminRoutes(mux)
	return mux
}

// SetStoreLag sets the lag between ingest and store of events ingested
// from now on.
func (o *OpenMeter) SetStoreLag(d time.Duration) { o.faults.setLag("", d) }

// DefaultOpenMeterRetryAfter is the Retry-After of a 429 that
// [OpenMeter.FailCalls] answers when none is asked for.
const DefaultOpenMeterRetryAfter = time.Second

// The face's endpoints, for its counts and its faults.
const (
	omEvents     = "events"
	omMeterQuery = "meter_query"
)

// FailCalls makes the next c.Next calls of c.Endpoint ("events",
// "meter_query", or empty: each of them) answer c.Status, 429 (the
// default) with Retry-After in seconds or a 5xx, as a problem.
func (o *OpenMeter) FailCalls(c CallFault) error {
	err := o.faults.validEndpoint(c.Endpoint)
	if err == nil {
		err = o.faults.program(c)
	}
	return err
}

// AddMeter adds or replaces a meter.
func (o *OpenMeter) AddMeter(m OpenMeterMeter) error {
	if m.Slug == "" || m.EventType == "" || (m.Aggregation != "SUM" && m.Aggregation != "COUNT") {
		return errors.New("a meter needs a slug, an event_type and the aggregation SUM or COUNT")
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.meters[m.Slug] = m
	return nil
}

// OpenMeterEvent is an event as ingested.
type OpenMeterEvent struct {
	IngestedAt time.Time `json:"ingested_at"`
	StoredAt   time.Time `json:"stored_at"`
	Row        string    `json:"row"`
}

// Ingest ingests ev now, stored after the face's store lag.
func (o *OpenMeter) Ingest(ev UsageCloudEvent) (OpenMeterEvent, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.ingest(ev, o.faults.lagOf(""))
}

// IngestLate ingests ev now and stores it only after lag: a record that
// appears late, after windows on its ingestedAt have closed.
func (o *OpenMeter) IngestLate(ev UsageCloudEvent, lag time.Duration) (OpenMeterEvent, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	e, err := o.ingest(ev, lag)
	if err == nil {
		o.late = append(o.late, o.events[len(o.events)-1])
	}
	return e, err
}

// StoreLate stores now every event [OpenMeter.IngestLate] ingested that
// is not stored yet, for a driver on wall time, and returns how many.
func (o *OpenMeter) StoreLate() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	now, n := o.now().UTC().Truncate(time.Second), 0
	for _, e := range o.late {
		if e.storedAt.After(now) {
			e.storedAt, n = now, n+1
		}
	}
	o.late = nil
	return n
}

// IngestBetweenPages ingests evs now and stores them when a listing next
// asks for a page after its first: pages that change under the cursor.
func (o *OpenMeter) IngestBetweenPages(evs ...UsageCloudEvent) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, ev := range evs {
		if _, err := o.ingest(ev, omNever); err != nil {
			return err
		}
		o.between = append(o.between, o.events[len(o.events)-1])
	}
	return nil
}

// omNever is the store lag of an event held for [OpenMeter.IngestBetweenPages].
const omNever = 100 * 365 * 24 * time.Hour

func (o *OpenMeter) ingest(ev UsageCloudEvent, lag time.Duration) (OpenMeterEvent, error) {
	if ev.Time.IsZero() {
		return OpenMeterEvent{}, errors.New("an OpenMeter event has a time")
	}
	body, _, err := CloudEventsBody([]UsageCloudEvent{ev}, false)
	if err != nil {
		return OpenMeterEvent{}, err
	}
	o.rows++
	now := o.now().UTC().Truncate(time.Second)
	e := &omEvent{raw: body, ev: ev, ingestedAt: now, storedAt: now.Add(lag).Truncate(time.Second), row: fmt.Sprintf("%026d", o.rows)}
	e.ev.Time = ev.Time.UTC().Truncate(time.Second)
	o.events = append(o.events, e)
	return OpenMeterEvent{IngestedAt: e.ingestedAt, StoredAt: e.storedAt, Row: e.row}, nil
}

// OpenMeterCalls counts the calls of each endpoint ("events",
// "meter_query"), the refused ones ("refused"), and once a fault fired
// the 429s ("rate_limited") and 5xx ("server_errors") answered.
func (o *OpenMeter) OpenMeterCalls() map[string]int {
	c := o.faults.counts()
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[string]int{}
	for k, v := range o.calls {
		out[k] = v
	}
	if n := sum(c.throttled); n > 0 {
		out["rate_limited"] = n
	}
	if n := sum(c.failed); n > 0 {
		out["server_errors"] = n
	}
	return out
}

// Refusals are the reasons of every request answered 400, in order.
func (o *OpenMeter) Refusals() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.refusals)
}

// visible are the events stored by now.
func (o *OpenMeter) visible() []*omEvent {
	now := o.now()
	var out []*omEvent
	for _, e := range o.events {
		if !e.storedAt.After(now) {
			out = append(out, e)
		}
	}
	return out
}

// authorized checks the bearer token.
func (o *OpenMeter) authorized(w http.ResponseWriter, r *http.Request) bool {
	if o.apiKey == "" || r.Header.Get("Authorization") == "Bearer "+o.apiKey {
		return true
	}
	writeProblem(w, http.StatusUnauthorized, "invalid API key")
	return false
}

// refuse answers 400 with a problem, as OpenMeter answers a validation
// error, and records why. The caller holds o.mu.
func (o *OpenMeter) refuse(w http.ResponseWriter, why string) {
	o.calls["refused"]++
	o.refusals = append(o.refusals, why)
	o.log.Info("openmeter face refused a request", "why", why)
	writeProblem(w, http.StatusBadRequest, why)
}

// writeProblem writes an application/problem+json answer.
func writeProblem(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "about:blank", "title": http.StatusText(status),
		"status": status, "detail": detail})
}

// omCursor is OpenMeter's cursor: base64 of "<RFC 3339 time>,<row>".
func omCursor(t time.Time, row string) string {
	return base64.StdEncoding.EncodeToString([]byte(t.UTC().Format(time.RFC3339) + "," + row))
}

func parseOMCursor(s string) (time.Time, string, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return time.Time{}, "", errors.New("cursor: not base64")
	}
	ts, row, ok := strings.Cut(string(b), ",")
	t, terr := time.Parse(time.RFC3339, ts)
	if !ok || terr != nil || row == "" {
		return time.Time{}, "", errors.New("cursor: want <RFC 3339 time>,<id>")
	}
	return t, row, nil
}
