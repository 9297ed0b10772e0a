package providersim

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// meterRoutes serves the meter API and its administration.
func (s *core) meterRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/billing/meter_events", s.handleMeterEvent)
	mux.HandleFunc("POST /v1/billing/meter_event_adjustments", s.handleMeterAdjustment)
	mux.HandleFunc("GET /v1/billing/meters/{id}/event_summaries", s.handleMeterSummaries)
	s.meterAdminRoutes(mux)
}

// writeMeterError answers as Stripe does, leaving out what is empty.
func writeMeterError(w http.ResponseWriter, status int, code, param, msg string) {
	e := map[string]string{"type": "invalid_request_error", "message": msg}
	if code != "" {
		e["code"] = code
	}
	if param != "" {
		e["param"] = param
	}
	writeJSON(w, status, map[string]any{"error": e})
}

func writeRefusal(w http.ResponseWriter, e *meterRefusal) {
	if e.noRetry {
		w.Header().Set("Stripe-Should-Retry", "false")
	}
	writeMeterError(w, http.StatusBadRequest, e.code, e.param, e.msg)
}

// keyMode is the mode of the request's key: live, test, or unknown when
// the key has neither prefix.
func keyMode(r *http.Request) (live, known bool) {
	key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	switch {
	case strings.HasPrefix(key, "sk_live_"), strings.HasPrefix(key, "rk_live_"):
		return true, true
	case strings.HasPrefix(key, "sk_test_"), strings.HasPrefix(key, "rk_test_"):
		return false, true
	}
	return false, false
}

// sameMode reports whether the request's key is of the face's mode.
func (b *meterBook) sameMode(r *http.Request) bool {
	live, known := keyMode(r)
	b.mu.Lock()
	defer b.mu.Unlock()
	return !known || live == b.livemode
}

// admit counts a call of ep, checks its key and its rate, and reports
// whether it may go on; if not, it has answered.
func (s *core) admit(w http.ResponseWriter, r *http.Request, ep MeterEndpoint) bool {
	b := &s.meters
	b.mu.Lock()
	switch ep {
	case MeterEventsEndpoint:
		b.calls.Events++
	case MeterAdjustmentsEndpoint:
		b.calls.Adjustments++
	case MeterSummariesEndpoint:
		b.calls.Summaries++
	}
	b.mu.Unlock()
	if !s.authorized(w, r) {
		return false
	}
	switch v := b.faults.admit(string(ep), s.now()); v.status {
	case 0:
		return true
	case http.StatusTooManyRequests:
		// Stripe's answer has no Retry-After, so a client picks its own
		// wait, unless a programmed fault asks for one.
		v.setRetryAfter(w)
		writeMeterError(w, v.status, "rate_limit", "",
			"Request rate limit exceeded. Learn more about rate limits here https://stripe.com/docs/rate-limits.")
	default:
		v.setRetryAfter(w) // only when a programmed 5xx asks for one
		writeJSON(w, v.status, map[string]any{"error": map[string]string{"type": "api_error",
			"message": "An unknown error occurred. Please try again."}})
	}
	return false
}

// readMeterForm parses a form-encoded body, answering 400 when it cannot.
func readMeterForm(w http.ResponseWriter, r *http.Request) bool {
	r.Body = http.MaxBytesReader(w, r.Body, maxRequestBytes)
	if err := r.ParseForm(); err != nil {
		writeMeterError(w, http.StatusBadRequest, "parameter_invalid", "", "request body unreadable or too large")
		return false
	}
	return true
}

// stripeMeterEvent is a billing.meter_event as Stripe answers it.
type stripeMeterEvent struct {
	Object     string            `json:"object"`
	Created    int64             `json:"created"`
	EventName  string            `json:"event_name"`
	Identifier string            `json:"identifier"`
	Livemode   bool              `json:"livemode"`
	Payload    map[string]string `json:"payload"`
	Timestamp  int64             `json:"timestamp"`
}

func (s *core) handleMeterEvent(w http.ResponseWriter, r *http.Request) {
	if !s.admit(w, r, MeterEventsEndpoint) || !readMeterForm(w, r) {
		return
	}
	f := r.PostForm
	ev := MeterEvent{EventName: f.Get("event_name"), Customer: f.Get("payload[stripe_customer_id]"),
		Value: f.Get("payload[value]"), Identifier: f.Get("identifier")}
	if ts := f.Get("timestamp"); ts != "" {
		sec, err := strconv.ParseInt(ts, 10, 64)
		if err != nil {
			writeMeterError(w, http.StatusBadRequest, "parameter_invalid_integer", "timestamp", "Invalid integer: "+ts)
			return
		}
		ev.Timestamp = time.Unix(sec, 0)
	}
	b := &s.meters
	now := s.now()
	ev, err := b.record(ev, now, b.sameMode(r))
	var refusal *meterRefusal
	if errors.As(err, &refusal) {
		writeRefusal(w, refusal)
		return
	}
	// An event no meter takes is accepted: Stripe reports it later.
	payload := map[string]string{"stripe_customer_id": ev.Customer}
	if ev.Value != "" {
		payload["value"] = ev.Value
	}
	writeJSON(w, http.StatusOK, stripeMeterEvent{Object: "billing.meter_event", Created: now.Unix(), EventName: ev.EventName,
		Identifier: ev.Identifier, Livemode: s.livemode(), Payload: payload, Timestamp: ev.Timestamp.Unix()})
}

func (s *core) livemode() bool {
	s.meters.mu.Lock()
	defer s.meters.mu.Unlock()
	return s.meters.livemode
}

func (s *core) handleMeterAdjustment(w http.ResponseWriter, r *http.Request) {
	if !s.admit(w, r, MeterAdjustmentsEndpoint) || !readMeterForm(w, r) {
		return
	}
	f := r.PostForm
	for _, name := range []string{"event_name", "type", "cancel[identifier]"} {
		if f.Get(name) == "" {
			writeMeterError(w, http.StatusBadRequest, "parameter_missing", name, "Missing required param: "+name+".")
			return
		}
	}
	if f.Get("type") != "cancel" {
		writeMeterError(w, http.StatusBadRequest, "parameter_invalid", "type", "Invalid type: must be cancel.")
		return
	}
	name, id := f.Get("event_name"), f.Get("cancel[identifier]")
	b := &s.meters
	if b.sameMode(r) {
		b.cancel(name, id, s.now())
	} else {
		b.mu.Lock()
		b.calls.UnmatchedCancels++
		b.mu.Unlock()
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "billing.meter_event_adjustment", "event_name": name,
		"livemode": s.livemode(), "status": "pending", "type": "cancel", "cancel": map[string]string{"identifier": id}})
}

// summaryQuery is one parsed GET event_summaries.
type summaryQuery struct {
	meter, customer string
	start, end      time.Time
	window          time.Duration // 0: one summary for the whole range
	limit           int
	after, before   *int64 // cursors: the unix start of a bucket
}

// summaryIDPrefix starts every summary ID; summaryNonce random characters
// follow, then the bucket's start in base 36.
const (
	summaryIDPrefix = "mtrusg_"
	summaryNonce    = 12
)

func parseSummaryCursor(id string) (int64, bool) {
	rest, ok := strings.CutPrefix(id, summaryIDPrefix)
	if !ok || len(rest) <= summaryNonce {
		return 0, false
	}
	start, err := strconv.ParseInt(rest[summaryNonce:], 36, 64)
	return start, err == nil
}

// unixParam reads a required unix time.
func unixParam(q map[string][]string, name string) (int64, *meterRefusal) {
	v := ""
	if len(q[name]) > 0 {
		v = q[name][0]
	}
	if v == "" {
		return 0, &meterRefusal{code: "parameter_missing", param: name, msg: "Missing required param: " + name + "."}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, &meterRefusal{code: "parameter_invalid_integer", param: name, msg: "Invalid integer: " + v}
	}
	return n, nil
}

// parseSummaryQuery validates a query as Stripe does.
func parseSummaryQuery(r *http.Request) (summaryQuery, *meterRefusal) {
	q := r.URL.Query()
	x := summaryQuery{meter: r.PathValue("id"), customer: q.Get("customer"), limit: DefaultSummaryPageSize}
	if x.customer == "" {
		return x, &meterRefusal{code: "parameter_missing", param: "customer", msg: "Missing required param: customer."}
	}
	start, bad := unixParam(q, "start_time")
	if bad != nil {
		return x, bad
	}
	end, bad := unixParam(q, "end_time")
	if bad != nil {
		return x, bad
	}
	align := int64(60)
	switch w := q.Get("value_grouping_window"); w {
	case "":
	case "hour":
		x.window, align = time.Hour, 3600
	case "day":
		x.window, align = 24*time.Hour, 86400
	default:
		return x, &meterRefusal{code: "parameter_invalid", param: "value_grouping_window",
			msg: "Invalid value_grouping_window: must be one of day or hour."}
	}
	for _, p := range []struct {
		name string
		v    int64
	}{{"start_time", start}, {"end_time", end}} {
		if p.v%align != 0 {
			return x, &meterRefusal{code: "parameter_invalid", param: p.name,
				msg: fmt.Sprintf("%s must be aligned with %s boundaries.", p.name, map[int64]string{60: "minute", 3600: "hour", 86400: "UTC day"}[align])}
		}
	}
	if start >= end {
		return x, &meterRefusal{code: "parameter_invalid", param: "start_time", msg: "start_time must be before end_time."}
	}
	x.start, x.end = time.Unix(start, 0).UTC(), time.Unix(end, 0).UTC()
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return x, &meterRefusal{code: "parameter_invalid_integer", param: "limit", msg: "Invalid integer: " + v}
		}
		if n < 1 || n > MaxSummaryPageSize {
			return x, &meterRefusal{code: "parameter_invalid", param: "limit",
				msg: fmt.Sprintf("limit must be between 1 and %d.", MaxSummaryPageSize)}
		}
		x.limit = n
	}
	after, before := q.Get("starting_after"), q.Get("ending_before")
	if after != "" && before != "" {
		return x, &meterRefusal{code: "parameter_invalid", param: "starting_after",
			msg: "You may only specify one of these parameters: ending_before, starting_after."}
	}
	for _, c := range []struct {
		name, id string
		dst      **int64
	}{{"starting_after", after, &x.after}, {"ending_before", before, &x.before}} {
		if c.id == "" {
			continue
		}
		at, ok := parseSummaryCursor(c.id)
		if !ok {
			return x, &meterRefusal{code: "resource_missing", param: c.name,
				msg: fmt.Sprintf("No such billing meter event summary: '%s'", c.id)}
		}
		*c.dst = &at
	}
	return x, nil
}

// meterSummary is a billing.meter_event_summary as Stripe answers it.
type meterSummary struct {
	ID              string      `json:"id"`
	Object          string      `json:"object"`
	AggregatedValue json.Number `json:"aggregated_value"`
	StartTime       int64       `json:"start_time"`
	EndTime         int64       `json:"end_time"`
	Meter           string      `json:"meter"`
	Livemode        bool        `json:"livemode"`
}

// summaryList is Stripe's list of summaries.
type summaryList struct {
	Object  string         `json:"object"`
	Data    []meterSummary `json:"data"`
	HasMore bool           `json:"has_more"`
	URL     string         `json:"url"`
}

func (s *core) handleMeterSummaries(w http.ResponseWriter, r *http.Request) {
	if !s.admit(w, r, MeterSummariesEndpoint) {
		return
	}
	q, bad := parseSummaryQuery(r)
	if bad != nil {
		writeRefusal(w, bad)
		return
	}
	b := &s.meters
	list, ok := summaryList{}, false
	if b.sameMode(r) {
		list, ok = b.summaries(q, s.now())
	}
	if !ok {
		writeMeterError(w, http.StatusNotFound, "resource_missing", "id", fmt.Sprintf("No such billing meter: '%s'", q.meter))
		return
	}
	writeJSON(w, http.StatusOK, list)
}

// bucketSum is one bucket of a summary answer.
type bucketSum struct {
	start, end time.Time
	exact      *big.Rat
	naive      float64
}

// summaries answers q at now, and reports whether the meter exists.
func (b *meterBook) summaries(q summaryQuery, now time.Time) (summaryList, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.meters[q.meter]; !ok {
		return summaryList{}, false
	}
	buckets := b.bucketsLocked(q, now)
	if q.after != nil {
		buckets = slices.DeleteFunc(buckets, func(s *bucketSum) bool { return s.start.Unix() <= *q.after })
	}
	limit, short := b.faults.pageLimit(q.limit)
	hasMore := len(buckets) > limit
	switch {
	case q.before != nil:
		buckets = slices.DeleteFunc(buckets, func(s *bucketSum) bool { return s.start.Unix() >= *q.before })
		hasMore = len(buckets) > limit
		buckets = buckets[max(len(buckets)-limit, 0):]
	case hasMore:
		buckets = buckets[:limit]
	}
	if hasMore && short {
		b.faults.endedEarly()
	}
	list := summaryList{Object: "list", Data: make([]meterSummary, 0, len(buckets)), HasMore: hasMore,
		URL: "/v1/billing/meters/" + q.meter + "/event_summaries"}
	for _, s := range buckets {
		list.Data = append(list.Data, meterSummary{
			ID:     summaryIDPrefix + b.randomLocked(summaryNonce) + strconv.FormatInt(s.start.Unix(), 36),
			Object: "billing.meter_event_summary", AggregatedValue: b.faults.render(s.exact, s.naive, q.meter, q.customer, s.start.String()),
			StartTime: s.start.Unix(), EndTime: s.end.Unix(), Meter: q.meter, Livemode: b.livemode,
		})
	}
	return list, true
}

// bucketsLocked sums the events shown at now into q's buckets, in
// ascending order, leaving out buckets without events and those a gap
// hides.
func (b *meterBook) bucketsLocked(q summaryQuery, now time.Time) []*bucketSum {
	lag := b.faults.lagOf(q.meter)
	byStart := map[int64]*bucketSum{}
	for _, e := range b.series[seriesKey{q.meter, q.customer}] {
		if e.at.Before(q.start) || !e.at.Before(q.end) || !e.shown(now, lag) {
			continue
		}
		start, end := q.start, q.end
		if q.window > 0 {
			start = e.at.Truncate(q.window)
			end = start.Add(q.window)
		}
		s := byStart[start.Unix()]
		if s == nil {
			s = &bucketSum{start: start, end: end, exact: new(big.Rat)}
			byStart[start.Unix()] = s
		}
		if e.counts(now, lag) {
			s.exact.Add(s.exact, e.value)
			s.naive += e.float
		}
	}
	out := make([]*bucketSum, 0, len(byStart))
	for _, s := range byStart {
		if !b.faults.hidden([2]string{q.meter, q.customer}, s.start, s.end, now) {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(x, y *bucketSum) int { return x.start.Compare(y.start) })
	return out
}
