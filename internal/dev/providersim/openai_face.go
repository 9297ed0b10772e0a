package providersim

import (
	"fmt"
	"maps"
	"math/big"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hookline/hookline/internal/sums"
)

// openaiRoutes serves OpenAI's organization usage and costs, and their
// administration.
func (s *core) openaiRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/organization/usage/{endpoint}", func(w http.ResponseWriter, r *http.Request) {
		s.handleOpenAI(w, r, r.PathValue("endpoint"))
	})
	mux.HandleFunc("GET /v1/organization/costs", func(w http.ResponseWriter, r *http.Request) {
		s.handleOpenAI(w, r, sums.OpenAICosts)
	})
	s.openaiAdminRoutes(mux)
}

// OpenAISimPath is where OpenAI's face is scripted over HTTP; the package
// doc lists its routes.
const OpenAISimPath = "/sim/openai"

// openaiAdminRoutes serves the face's administration under
// [OpenAISimPath].
func (s *core) openaiAdminRoutes(mux *http.ServeMux) {
	p, sim := OpenAISimPath, &Sim{core: s}
	mux.HandleFunc("POST "+p+"/usage", adminJSON(func(u OpenAIUsage) (any, error) { return nil, sim.AddOpenAIUsage(u) }))
	mux.HandleFunc("POST "+p+"/costs", adminJSON(func(c OpenAICost) (any, error) { return nil, sim.AddOpenAICost(c) }))
	mux.HandleFunc("POST "+p+"/revise", adminJSON(func(c struct {
		Endpoint string    `json:"endpoint"`
		Project  string    `json:"project"`
		At       time.Time `json:"at"`
		Field    string    `json:"field"`
		By       int64     `json:"by"`
	}) (any, error) {
		return nil, sim.ReviseOpenAIUsage(c.Endpoint, c.Project, c.At, c.Field, c.By)
	}))
	mux.HandleFunc("POST "+p+"/costs/revise", adminJSON(func(c struct {
		Project string    `json:"project"`
		At      time.Time `json:"at"`
		By      string    `json:"by"`
	}) (any, error) {
		return nil, sim.ReviseOpenAICost(c.Project, c.At, c.By)
	}))
	mux.HandleFunc("POST "+p+"/gaps", adminJSON(func(g OpenAIGap) (any, error) { return nil, sim.AddOpenAIGap(g) }))
	s.openai().faults.routes(mux, p)
	mux.HandleFunc("GET "+p+"/calls", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, sim.OpenAICalls()) })
}

// openaiWidths are the bucket widths OpenAI serves, with the default and
// largest limit of a usage endpoint's page (in buckets).
var openaiWidths = map[string]struct {
	width      time.Duration
	def, limit int
}{
	"1m": {time.Minute, 60, 1440},
	"1h": {time.Hour, 24, 168},
	"1d": {sums.Day, 7, 31},
}

// openaiCostsLimit is the largest limit of a page of costs.
const openaiCostsLimit = 180

// openaiQuery is one parsed GET of usage or costs.
type openaiQuery struct {
	endpoint   string
	start, end time.Time
	width      time.Duration
	limit      int
	byProject  bool
	projects   []string
}

// writeOpenAIError answers as OpenAI does: an invalid_request_error, or
// a server_error when status is a 5xx.
func writeOpenAIError(w http.ResponseWriter, status int, code, param, msg string) {
	typ := "invalid_request_error"
	if status >= 500 {
		typ = "server_error"
	}
	e := map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}
	if code != "" {
		e["code"] = code
	}
	if param != "" {
		e["param"] = param
	}
	writeJSON(w, status, map[string]any{"error": e})
}

func (s *core) handleOpenAI(w http.ResponseWriter, r *http.Request, endpoint string) {
	b := s.openai()
	if !b.admit(w, r, endpoint, s.now()) {
		return
	}
	q, param, problem := parseOpenAIQuery(r, endpoint, s.now())
	if problem != "" {
		writeOpenAIError(w, http.StatusBadRequest, "", param, problem)
		return
	}
	writeJSON(w, http.StatusOK, b.page(q, s.now()))
}

// admit counts a call, checks its admin key and the 429 fault, and
// reports whether it may go on; if not, it has answered.
func (b *openaiBook) admit(w http.ResponseWriter, r *http.Request, endpoint string, now time.Time) bool {
	key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	b.mu.Lock()
	if endpoint == sums.OpenAICosts {
		b.calls.Costs++
	} else {
		b.calls.Usage++
	}
	wrongKey := (b.key != "" && key != b.key) || (b.key == "" && !strings.HasPrefix(key, "sk-admin-"))
	b.mu.Unlock()
	if wrongKey {
		writeOpenAIError(w, http.StatusUnauthorized, "invalid_api_key", "",
			"Incorrect API key provided. This endpoint requires an admin key.")
		return false
	}
	v := b.faults.admit("", now)
	if v.status != 0 && v.retryAfter >= 0 {
		w.Header().Set("Retry-After-Ms", strconv.FormatInt(v.retryAfter.Milliseconds(), 10))
	}
	switch v.status {
	case 0:
		return true
	case http.StatusTooManyRequests:
		writeOpenAIError(w, v.status, "rate_limit_exceeded", "", "Rate limit reached for requests.")
	default:
		writeOpenAIError(w, v.status, "", "", "The server had an error while processing your request.")
	}
	return false
}

// parseOpenAIQuery validates a query as OpenAI's reference describes it,
// and returns the refused parameter and why.
func parseOpenAIQuery(r *http.Request, endpoint string, now time.Time) (openaiQuery, string, string) {
	v := r.URL.Query()
	q := openaiQuery{endpoint: endpoint}
	ep, ok := sums.OpenAIEndpoints[endpoint]
	if !ok {
		return q, "endpoint", "Unknown usage endpoint: " + endpoint
	}
	width := v.Get("bucket_width")
	if width == "" {
		width = "1d"
	}
	wd, ok := openaiWidths[width]
	if !ok || (ep.Money && width != "1d") {
		return q, "bucket_width", "Invalid bucket_width: " + width
	}
	q.width, q.limit = wd.width, wd.def
	start, err := strconv.ParseInt(v.Get("start_time"), 10, 64)
	if err != nil {
		return q, "start_time", "start_time is required and must be a unix time in seconds"
	}
	q.start = time.Unix(start, 0).UTC().Truncate(q.width)
	q.end = now.UTC().Truncate(q.width).Add(q.width)
	if e := v.Get("end_time"); e != "" {
		end, err := strconv.ParseInt(e, 10, 64)
		if err != nil || end <= start {
			return q, "end_time", "end_time must be a unix time after start_time"
		}
		q.end = time.Unix(end, 0).UTC()
	}
	top := wd.limit
	if ep.Money {
		top = openaiCostsLimit
	}
	if l := v.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > top {
			return q, "limit", fmt.Sprintf("limit must be between 1 and %d for bucket_width %s", top, width)
		}
		q.limit = n
	}
	if p := v.Get("page"); p != "" {
		at, ok := parseOpenAICursor(p)
		if !ok {
			return q, "page", "Invalid page: " + p
		}
		q.start = openaiLater(q.start, at)
	}
	q.byProject = slices.Contains(append(v["group_by[]"], v["group_by"]...), "project_id")
	q.projects = append(v["project_ids[]"], v["project_ids"]...)
	return q, "", ""
}

const openaiCursorPrefix = "page_"

func openaiCursor(t time.Time) string {
	return openaiCursorPrefix + strconv.FormatInt(t.Unix(), 36)
}

func parseOpenAICursor(s string) (time.Time, bool) {
	rest, ok := strings.CutPrefix(s, openaiCursorPrefix)
	n, err := strconv.ParseInt(rest, 36, 64)
	return time.Unix(n, 0).UTC(), ok && err == nil
}

func openaiLater(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// page answers q at now: every bucket of the range from q.start, at most
// a limit (or the short page size) of them.
func (b *openaiBook) page(q openaiQuery, now time.Time) map[string]any {
	size, short := b.faults.pageLimit(q.limit)
	lag := b.faults.lagOf("")
	b.mu.Lock()
	defer b.mu.Unlock()
	data := []map[string]any{}
	at := q.start
	for ; at.Before(q.end) && len(data) < size; at = at.Add(q.width) {
		data = append(data, map[string]any{"object": "bucket", "start_time": at.Unix(),
			"end_time": at.Add(q.width).Unix(), "results": b.resultsLocked(q, at, now, lag)})
	}
	p := map[string]any{"object": "page", "data": data, "has_more": false, "next_page": nil}
	if at.Before(q.end) {
		p["has_more"], p["next_page"] = true, openaiCursor(at)
		if short {
			b.faults.endedEarly()
		}
	}
	return p
}

// openaiGroup is one result's group: its project (empty when not
// grouped) and, for costs, its currency.
type openaiGroup struct{ project, currency string }

// openaiTotal is one group's sums in a bucket.
type openaiTotal struct {
	fields map[string]int64
	exact  *big.Rat
	naive  float64
}

// resultsLocked are the results of the bucket at start: the records shown
// at now, lag after they arrived, grouped, unless a gap hides the bucket.
func (b *openaiBook) resultsLocked(q openaiQuery, start, now time.Time, lag time.Duration) []map[string]any {
	end := start.Add(q.width)
	totals := map[openaiGroup]*openaiTotal{}
	for _, r := range b.records {
		if r.endpoint != q.endpoint || r.at.Before(start) || !r.at.Before(end) ||
			!shown(r.received, r.revision, now, lag) || (len(q.projects) > 0 && !slices.Contains(q.projects, r.project)) ||
			b.faults.hidden([2]string{q.endpoint, r.project}, start, end, now) {
			continue
		}
		g := openaiGroup{currency: r.currency}
		if q.byProject {
			g.project = r.project
		}
		t := totals[g]
		if t == nil {
			t = &openaiTotal{fields: map[string]int64{}, exact: new(big.Rat)}
			totals[g] = t
		}
		for f, n := range r.fields {
			t.fields[f] += n
		}
		if r.cost != nil {
			t.exact.Add(t.exact, r.cost)
			f, _ := r.cost.Float64()
			t.naive += f
		}
	}
	out := []map[string]any{}
	for _, g := range slices.SortedFunc(maps.Keys(totals), func(x, y openaiGroup) int {
		return strings.Compare(x.project+x.currency, y.project+y.currency)
	}) {
		out = append(out, b.renderLocked(q.endpoint, start, g, totals[g]))
	}
	return out
}

// renderLocked is one result as OpenAI answers it.
func (b *openaiBook) renderLocked(endpoint string, start time.Time, g openaiGroup, t *openaiTotal) map[string]any {
	res := map[string]any{"project_id": nil, "api_key_id": nil, "user_id": nil}
	if g.project != "" {
		res["project_id"] = g.project
	}
	if endpoint == sums.OpenAICosts {
		res["object"] = "organization.costs.result"
		res["line_item"] = nil
		res["amount"] = map[string]any{"value": b.faults.render(t.exact, t.naive, endpoint, g.project, start.String()), "currency": g.currency}
		return res
	}
	object := strings.NewReplacer("file_search_calls", "file_searches", "web_search_calls", "web_searches").Replace(endpoint)
	res["object"] = "organization.usage." + object + ".result"
	res["model"] = nil
	for _, f := range sums.OpenAIEndpoints[endpoint].Fields {
		res[f] = t.fields[f]
	}
	return res
}
