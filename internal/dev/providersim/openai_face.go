package providersim

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
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

// writeOpenAIError answers as OpenAI does.
func writeOpenAIError(w http.ResponseWriter, status int, code, param, msg string) {
	e := map[string]any{"message": msg, "type": "invalid_request_error", "param": nil, "code": nil}
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
	if !b.admit(w, r, endpoint) {
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
func (b *openaiBook) admit(w http.ResponseWriter, r *http.Request, endpoint string) bool {
	key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	b.mu.Lock()
	defer b.mu.Unlock()
	if endpoint == sums.OpenAICosts {
		b.calls.Costs++
	} else {
		b.calls.Usage++
	}
	if (b.key != "" && key != b.key) || (b.key == "" && !strings.HasPrefix(key, "sk-admin-")) {
		writeOpenAIError(w, http.StatusUnauthorized, "invalid_api_key", "",
			"Incorrect API key provided. This endpoint requires an admin key.")
		return false
	}
	if b.fail > 0 {
		b.fail--
		b.calls.RateLimited++
		if b.retryAfter >= 0 {
			w.Header().Set("Retry-After-Ms", strconv.FormatInt(b.retryAfter.Milliseconds(), 10))
		}
		writeOpenAIError(w, http.StatusTooManyRequests, "rate_limit_exceeded", "", "Rate limit reached for requests.")
		return false
	}
	return true
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
	b.mu.Lock()
	defer b.mu.Unlock()
	size := q.limit
	if b.pageSize > 0 && b.pageSize < size {
		size = b.pageSize
	}
	data := []map[string]any{}
	at := q.start
	for ; at.Before(q.end) && len(data) < size; at = at.Add(q.width) {
		data = append(data, map[string]any{"object": "bucket", "start_time": at.Unix(),
			"end_time": at.Add(q.width).Unix(), "results": b.resultsLocked(q, at, now)})
	}
	p := map[string]any{"object": "page", "data": data, "has_more": false, "next_page": nil}
	if at.Before(q.end) {
		p["has_more"], p["next_page"] = true, openaiCursor(at)
		if size < q.limit {
			b.calls.ShortPages++
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
// at now, grouped, unless a gap hides the bucket.
func (b *openaiBook) resultsLocked(q openaiQuery, start, now time.Time) []map[string]any {
	end := start.Add(q.width)
	totals := map[openaiGroup]*openaiTotal{}
	for _, r := range b.records {
		if r.endpoint != q.endpoint || r.at.Before(start) || !r.at.Before(end) ||
			(!r.revision && now.Before(r.received.Add(b.lag))) ||
			(len(q.projects) > 0 && !slices.Contains(q.projects, r.project)) || b.hiddenLocked(q.endpoint, r.project, start, end, now) {
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
		out = append(out, b.renderLocked(q.endpoint, g, totals[g]))
	}
	return out
}

// hiddenLocked reports whether an open gap hides the bucket.
func (b *openaiBook) hiddenLocked(endpoint, project string, start, end, now time.Time) bool {
	for _, g := range b.gaps {
		switch {
		case !g.Until.IsZero() && !now.Before(g.Until),
			g.Endpoint != "" && g.Endpoint != endpoint,
			g.Project != "" && g.Project != project:
			continue
		case !g.At.IsZero():
			if !g.At.Before(start) && g.At.Before(end) {
				return true
			}
		case openaiDraw(endpoint, project, start) < g.Share:
			return true
		}
	}
	return false
}

// openaiDraw is a number in [0, 1) fixed by the bucket.
func openaiDraw(endpoint, project string, start time.Time) float64 {
	h := uint64(14695981039346656037)
	for _, c := range []byte(endpoint + "\x00" + project + "\x00" + start.UTC().Format(time.RFC3339)) {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return float64(h>>11) / (1 << 53)
}

// renderLocked is one result as OpenAI answers it.
func (b *openaiBook) renderLocked(endpoint string, g openaiGroup, t *openaiTotal) map[string]any {
	res := map[string]any{"project_id": nil, "api_key_id": nil, "user_id": nil}
	if g.project != "" {
		res["project_id"] = g.project
	}
	if endpoint == sums.OpenAICosts {
		res["object"] = "organization.costs.result"
		res["line_item"] = nil
		res["amount"] = map[string]any{"value": b.amountLocked(t), "currency": g.currency}
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

// amountLocked is a cost's amount.value: the exact decimal, or with float
// noise the float64 sum in arrival order, one unit in the last place up
// when that sum came out exact.
func (b *openaiBook) amountLocked(t *openaiTotal) json.Number {
	if !b.noise {
		return json.Number(decimalText(t.exact))
	}
	v := t.naive
	if exact, _ := t.exact.Float64(); v == exact && v != 0 {
		v = math.Nextafter(v, math.Inf(1))
	}
	data, _ := json.Marshal(v)
	return json.Number(data)
}
