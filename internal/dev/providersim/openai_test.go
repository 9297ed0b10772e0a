package providersim_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/providersim"
)

var openaiDay = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)

// openaiFace serves a simulator on a manual clock a day after openaiDay.
func openaiFace(t *testing.T) (*providersim.Sim, *httptest.Server) {
	t.Helper()
	clock := providersim.NewManualClock(openaiDay.Add(24 * time.Hour))
	sim, err := providersim.New(providersim.Config{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	return sim, srv
}

// openaiGet calls the face with key and returns the status, retry-after-ms
// and body.
func openaiGet(t *testing.T, srv *httptest.Server, key, path string) (int, string, map[string]any) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var body map[string]any
	if err := json.Unmarshal(b, &body); err != nil {
		t.Fatalf("%s: %s", path, b)
	}
	return resp.StatusCode, resp.Header.Get("Retry-After-Ms"), body
}

func openaiAdmin(t *testing.T, srv *httptest.Server, path, body string) int {
	t.Helper()
	resp, err := http.Post(srv.URL+providersim.OpenAISimPath+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestOpenAIFaceRefusesWhatOpenAIRefuses(t *testing.T) {
	start := strconv.FormatInt(openaiDay.Unix(), 10)
	tests := []struct {
		name, key, path string
		status          int
		param           string
	}{
		{name: "a project key", key: "sk-proj-1", path: "/v1/organization/usage/completions?start_time=" + start, status: 401},
		{name: "no start_time", key: providersim.OpenAIAdminKey, path: "/v1/organization/usage/completions", status: 400, param: "start_time"},
		{name: "costs by the hour", key: providersim.OpenAIAdminKey, path: "/v1/organization/costs?bucket_width=1h&start_time=" + start,
			status: 400, param: "bucket_width"},
		{name: "too many hour buckets", key: providersim.OpenAIAdminKey,
			path: "/v1/organization/usage/completions?bucket_width=1h&limit=169&start_time=" + start, status: 400, param: "limit"},
		{name: "an unknown endpoint", key: providersim.OpenAIAdminKey, path: "/v1/organization/usage/chats?start_time=" + start,
			status: 400, param: "endpoint"},
		{name: "a page it never gave", key: providersim.OpenAIAdminKey, path: "/v1/organization/costs?page=xyz&start_time=" + start,
			status: 400, param: "page"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Given the face, when it is asked what OpenAI refuses,
			_, srv := openaiFace(t)
			status, _, body := openaiGet(t, srv, tc.key, tc.path)
			// then it refuses as OpenAI does, naming the parameter.
			e, _ := body["error"].(map[string]any)
			if status != tc.status || e == nil || (tc.param != "" && e["param"] != tc.param) {
				t.Fatalf("%d %v, want %d naming %q", status, body, tc.status, tc.param)
			}
		})
	}
}

func TestOpenAIFaceIsDrivenOverHTTP(t *testing.T) {
	// Given usage, a cost, a revision down, short pages and a 429, all set
	// over /sim/openai,
	sim, srv := openaiFace(t)
	at := openaiDay.Add(90 * time.Minute).Format(time.RFC3339)
	for _, c := range []struct{ path, body string }{
		{"/usage", `{"endpoint": "completions", "project": "proj_a", "at": "` + at + `", "fields": {"input_tokens": 10, "output_tokens": 2}}`},
		{"/usage", `{"endpoint": "completions", "project": "proj_b", "at": "` + at + `", "fields": {"input_tokens": 99}}`},
		{"/revise", `{"endpoint": "completions", "project": "proj_a", "at": "` + at + `", "field": "input_tokens", "by": -3}`},
		{"/costs", `{"project": "proj_a", "at": "` + at + `", "value": "0.5"}`},
		{"/costs/revise", `{"project": "proj_a", "at": "` + at + `", "by": "-0.2"}`},
		{"/pagesize", `{"buckets": 2}`},
		{"/fail", `{"next": 1, "retry_after": "250ms"}`},
	} {
		if s := openaiAdmin(t, srv, c.path, c.body); s/100 != 2 {
			t.Fatalf("POST %s: %d", c.path, s)
		}
	}
	if s := openaiAdmin(t, srv, "/usage", `{"endpoint": "completions", "project": "proj_a", "fields": {"tokens": 1}}`); s != 400 {
		t.Fatalf("an unknown field: %d, want 400", s)
	}
	q := "/v1/organization/usage/completions?bucket_width=1h&group_by[]=project_id&project_ids[]=proj_a&start_time=" +
		strconv.FormatInt(openaiDay.Unix(), 10) + "&end_time=" + strconv.FormatInt(openaiDay.Add(3*time.Hour).Unix(), 10)

	// when the usage is read,
	status, after, _ := openaiGet(t, srv, providersim.OpenAIAdminKey, q)
	if status != 429 || after != "250" {
		t.Fatalf("first call: %d retry-after-ms %q, want 429 after 250", status, after)
	}
	status, _, page := openaiGet(t, srv, providersim.OpenAIAdminKey, q)

	// then the first page ends early after two buckets, with has_more and
	// a next page, and hour 1 holds proj_a's revised usage only;
	data, _ := page["data"].([]any)
	if status != 200 || len(data) != 2 || page["has_more"] != true || page["next_page"] == nil {
		t.Fatalf("page %d %v, want two buckets and more", status, page)
	}
	results := data[1].(map[string]any)["results"].([]any)
	res := results[0].(map[string]any)
	if len(results) != 1 || res["project_id"] != "proj_a" || res["input_tokens"] != 7.0 || res["output_tokens"] != 2.0 ||
		res["object"] != "organization.usage.completions.result" {
		t.Fatalf("hour 1: %v", results)
	}
	// the next page holds the last bucket;
	status, _, page = openaiGet(t, srv, providersim.OpenAIAdminKey, q+"&page="+page["next_page"].(string))
	if data, _ := page["data"].([]any); status != 200 || len(data) != 1 || page["has_more"] != false {
		t.Fatalf("second page %d %v, want the last bucket", status, page)
	}
	// and the truth is the revised sum, the cost exact.
	if n := sim.OpenAIUsageSum("completions", "proj_a", "input_tokens", openaiDay, openaiDay.Add(24*time.Hour)); n != 7 {
		t.Fatalf("truth = %d, want 7", n)
	}
	if c := sim.OpenAICostSum("proj_a", openaiDay, openaiDay.Add(24*time.Hour)); c != "0.3" {
		t.Fatalf("cost = %s, want 0.5 revised down to 0.3", c)
	}
	costs := "/v1/organization/costs?group_by[]=project_id&start_time=" + strconv.FormatInt(openaiDay.Unix(), 10) +
		"&end_time=" + strconv.FormatInt(openaiDay.Add(24*time.Hour).Unix(), 10)
	status, _, page = openaiGet(t, srv, providersim.OpenAIAdminKey, costs)
	amount := page["data"].([]any)[0].(map[string]any)["results"].([]any)[0].(map[string]any)["amount"].(map[string]any)
	if status != 200 || amount["value"] != 0.3 || amount["currency"] != "usd" {
		t.Fatalf("costs %d %v, want 0.3 usd", status, page)
	}
	if c := sim.OpenAICalls(); c.Usage != 3 || c.Costs != 1 || c.RateLimited != 1 || c.ShortPages != 1 {
		t.Fatalf("calls %+v", c)
	}
}
