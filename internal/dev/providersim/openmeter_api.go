package providersim

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// omMaxLimit is the spec's maxItems of an events page (and its default).
const omMaxLimit = 100

// omTimeOps are FilterTime's operators: a filter object takes exactly one.
var omTimeOps = []string{"$gt", "$gte", "$lt", "$lte", "$and", "$or"}

// timeFilter reads a FilterTime object as OpenMeter validates it: exactly
// one operator per object (so a window is an $and of two), times in RFC
// 3339, $and and $or lists of filters.
func timeFilter(raw json.RawMessage, field string) (func(time.Time) bool, error) {
	var ops map[string]json.RawMessage
	if err := json.Unmarshal(raw, &ops); err != nil {
		return nil, fmt.Errorf("filter.%s: want an object", field)
	}
	if len(ops) != 1 {
		return nil, fmt.Errorf("filter.%s: only one filter is allowed in an object, got %d: combine them with $and", field, len(ops))
	}
	for op, v := range ops {
		switch op {
		case "$and", "$or":
			return timeList(op, v, field)
		case "$gt", "$gte", "$lt", "$lte":
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return nil, fmt.Errorf("filter.%s.%s: want an RFC 3339 time", field, op)
			}
			t, err := time.Parse(time.RFC3339, s)
			if err != nil {
				return nil, fmt.Errorf("filter.%s.%s: want an RFC 3339 time", field, op)
			}
			return compare(op, t), nil
		}
		return nil, fmt.Errorf("filter.%s: unknown operator %q, want one of %v", field, op, omTimeOps)
	}
	return nil, nil
}

func timeList(op string, v json.RawMessage, field string) (func(time.Time) bool, error) {
	var parts []json.RawMessage
	if err := json.Unmarshal(v, &parts); err != nil || len(parts) == 0 {
		return nil, fmt.Errorf("filter.%s.%s: want a list of filters", field, op)
	}
	var fs []func(time.Time) bool
	for _, p := range parts {
		f, err := timeFilter(p, field)
		if err != nil {
			return nil, err
		}
		fs = append(fs, f)
	}
	return func(t time.Time) bool {
		for _, f := range fs {
			if f(t) != (op == "$and") {
				return op == "$or"
			}
		}
		return op == "$and"
	}, nil
}

func compare(op string, at time.Time) func(time.Time) bool {
	return func(t time.Time) bool {
		switch op {
		case "$gt":
			return t.After(at)
		case "$gte":
			return !t.Before(at)
		case "$lt":
			return t.Before(at)
		}
		return !t.After(at)
	}
}

// eventsFilter reads the filter parameter: time and ingestedAt as
// FilterTime, subject and type with $eq; any other member is refused.
func eventsFilter(text string) (func(*omEvent) bool, error) {
	if text == "" {
		return func(*omEvent) bool { return true }, nil
	}
	var members map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader([]byte(text)))
	if err := dec.Decode(&members); err != nil {
		return nil, errors.New("filter: not a JSON object")
	}
	var checks []func(*omEvent) bool
	for name, raw := range members {
		check, err := memberFilter(name, raw)
		if err != nil {
			return nil, err
		}
		checks = append(checks, check)
	}
	return func(e *omEvent) bool {
		for _, c := range checks {
			if !c(e) {
				return false
			}
		}
		return true
	}, nil
}

func memberFilter(name string, raw json.RawMessage) (func(*omEvent) bool, error) {
	switch name {
	case "time", "ingestedAt":
		f, err := timeFilter(raw, name)
		if err != nil {
			return nil, err
		}
		if name == "time" {
			return func(e *omEvent) bool { return f(e.ev.Time) }, nil
		}
		return func(e *omEvent) bool { return f(e.ingestedAt) }, nil
	case "subject", "type":
		var eq struct {
			Eq *string `json:"$eq"`
		}
		if err := json.Unmarshal(raw, &eq); err != nil || eq.Eq == nil {
			return nil, fmt.Errorf("filter.%s: the simulator takes only {\"$eq\": ...}", name)
		}
		if name == "subject" {
			return func(e *omEvent) bool { return e.ev.Subject == *eq.Eq }, nil
		}
		return func(e *omEvent) bool { return e.ev.Type == *eq.Eq }, nil
	}
	return nil, fmt.Errorf("filter: %q is not a filter of events", name)
}

// begin checks a call's key, counts it under endpoint and answers a
// programmed fault; when it reports true the caller holds o.mu and must
// unlock it.
func (o *OpenMeter) begin(w http.ResponseWriter, r *http.Request, endpoint string) bool {
	if !o.authorized(w, r) {
		return false
	}
	o.mu.Lock()
	o.calls[endpoint]++
	if v := o.faults.admit(endpoint, o.now()); v.status != 0 {
		o.mu.Unlock()
		v.setRetryAfter(w)
		writeProblem(w, v.status, http.StatusText(v.status))
		return false
	}
	return true
}

// omIngested is an IngestedEvent as the spec writes it.
type omIngested struct {
	Event      json.RawMessage `json:"event"`
	CustomerID string          `json:"customerId,omitempty"`
	IngestedAt string          `json:"ingestedAt"`
	StoredAt   string          `json:"storedAt"`
}

// handleEvents serves GET /api/v2/events: the stored events the filter
// takes, newest first by time then row, after the cursor; nextCursor only
// after a full page.
func (o *OpenMeter) handleEvents(w http.ResponseWriter, r *http.Request) {
	if !o.begin(w, r, omEvents) {
		return
	}
	defer o.mu.Unlock()
	q := r.URL.Query()
	limit := omMaxLimit
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > omMaxLimit {
			o.refuse(w, fmt.Sprintf("limit: want 1..%d", omMaxLimit))
			return
		}
		limit = n
	}
	match, err := eventsFilter(q.Get("filter"))
	if err != nil {
		o.refuse(w, err.Error())
		return
	}
	after := func(*omEvent) bool { return true }
	if c := q.Get("cursor"); c != "" {
		ct, row, err := parseOMCursor(c)
		if err != nil {
			o.refuse(w, err.Error())
			return
		}
		o.storeBetween()
		after = func(e *omEvent) bool { return e.ev.Time.Before(ct) || e.ev.Time.Equal(ct) && e.row < row }
	}
	var evs []*omEvent
	for _, e := range o.visible() {
		if match(e) && after(e) {
			evs = append(evs, e)
		}
	}
	slices.SortFunc(evs, func(a, b *omEvent) int { return cmp.Or(b.ev.Time.Compare(a.ev.Time), cmp.Compare(b.row, a.row)) })
	evs = evs[:min(limit, len(evs))]
	page := struct {
		Items      []omIngested `json:"items"`
		NextCursor string       `json:"nextCursor,omitempty"`
	}{Items: []omIngested{}}
	for _, e := range evs {
		page.Items = append(page.Items, omIngested{Event: e.raw, CustomerID: e.customerID,
			IngestedAt: e.ingestedAt.Format(time.RFC3339), StoredAt: e.storedAt.Format(time.RFC3339)})
	}
	if len(evs) == limit {
		last := evs[len(evs)-1]
		page.NextCursor = omCursor(last.ev.Time, last.row)
	}
	writeJSON(w, http.StatusOK, page)
}

// storeBetween stores the events held for a page that changes under the
// cursor. The caller holds o.mu.
func (o *OpenMeter) storeBetween() {
	now := o.now().UTC().Truncate(time.Second)
	for _, e := range o.between {
		e.storedAt = now
	}
	o.between = nil
}

// omWindows are the meter query's window sizes.
var omWindows = map[string]time.Duration{"MINUTE": time.Minute, "HOUR": time.Hour, "DAY": 24 * time.Hour}

// omRow is a MeterQueryRow.
type omRow struct {
	Value       float64           `json:"value"`
	WindowStart time.Time         `json:"windowStart"`
	WindowEnd   time.Time         `json:"windowEnd"`
	Subject     string            `json:"subject"`
	GroupBy     map[string]string `json:"groupBy"`
}

// handleMeterQuery serves GET /api/v1/meters/{slug}/query: the meter's
// stored events from from to to, in windows of windowSize (UTC) on event
// time, per subject; empty windows are left out.
func (o *OpenMeter) handleMeterQuery(w http.ResponseWriter, r *http.Request) {
	if !o.begin(w, r, omMeterQuery) {
		return
	}
	defer o.mu.Unlock()
	m, ok := o.meters[r.PathValue("slug")]
	if !ok {
		writeProblem(w, http.StatusNotFound, "meter not found")
		return
	}
	q := r.URL.Query()
	from, ferr := time.Parse(time.RFC3339, q.Get("from"))
	to, terr := time.Parse(time.RFC3339, q.Get("to"))
	width, wok := omWindows[q.Get("windowSize")]
	switch {
	case ferr != nil || terr != nil || !to.After(from):
		o.refuse(w, "from and to: want RFC 3339 times, to after from")
		return
	case !wok:
		o.refuse(w, "windowSize: the simulator takes MINUTE, HOUR or DAY")
		return
	case q.Get("windowTimeZone") != "" && q.Get("windowTimeZone") != "UTC":
		o.refuse(w, "windowTimeZone: the simulator takes UTC")
		return
	}
	for _, g := range q["groupBy"] {
		if g != "subject" {
			o.refuse(w, "groupBy: the simulator groups by subject only")
			return
		}
	}
	rows := o.meterRows(m, from, to, width, q["subject"])
	writeJSON(w, http.StatusOK, map[string]any{"from": from, "to": to, "windowSize": q.Get("windowSize"), "data": rows})
}

// meterRows sums or counts m's stored events per window and subject. The
// caller holds o.mu.
func (o *OpenMeter) meterRows(m OpenMeterMeter, from, to time.Time, width time.Duration, subjects []string) []omRow {
	type key struct {
		start   time.Time
		subject string
	}
	sums := map[key]float64{}
	for _, e := range o.visible() {
		if e.ev.Type != m.EventType || e.ev.Time.Before(from) || !e.ev.Time.Before(to) ||
			(len(subjects) > 0 && !slices.Contains(subjects, e.ev.Subject)) {
			continue
		}
		v := 1.0
		if m.Aggregation == "SUM" {
			v, _ = strconv.ParseFloat(e.ev.Value, 64)
		}
		sums[key{e.ev.Time.Truncate(width), e.ev.Subject}] += v
	}
	rows := []omRow{}
	for k, v := range sums {
		rows = append(rows, omRow{Value: v, WindowStart: k.start, WindowEnd: k.start.Add(width), Subject: k.subject, GroupBy: map[string]string{}})
	}
	slices.SortFunc(rows, func(a, b omRow) int {
		return cmp.Or(a.WindowStart.Compare(b.WindowStart), cmp.Compare(a.Subject, b.Subject))
	})
	return rows
}
