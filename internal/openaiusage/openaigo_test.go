package openaiusage_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	openai "github.com/openai/openai-go/v3"

	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/internal/openaiusage"
	"github.com/hookline/hookline/internal/sums"
)

// The oracle is openai-go v3's types for the admin usage and costs
// endpoints: the tests decode with them what the reader decodes with its
// own, and derive from them the fields a meter may count.

// resultTypes are openai-go's result types, by endpoint.
var resultTypes = map[string]any{
	"completions":               openai.AdminOrganizationUsageCompletionsResponseDataResultOrganizationUsageCompletionsResult{},
	"embeddings":                openai.AdminOrganizationUsageEmbeddingsResponseDataResultOrganizationUsageEmbeddingsResult{},
	"moderations":               openai.AdminOrganizationUsageModerationsResponseDataResultOrganizationUsageModerationsResult{},
	"images":                    openai.AdminOrganizationUsageImagesResponseDataResultOrganizationUsageImagesResult{},
	"audio_speeches":            openai.AdminOrganizationUsageAudioSpeechesResponseDataResultOrganizationUsageAudioSpeechesResult{},
	"audio_transcriptions":      openai.AdminOrganizationUsageAudioTranscriptionsResponseDataResultOrganizationUsageAudioTranscriptionsResult{},
	"vector_stores":             openai.AdminOrganizationUsageVectorStoresResponseDataResultOrganizationUsageVectorStoresResult{},
	"code_interpreter_sessions": openai.AdminOrganizationUsageCodeInterpreterSessionsResponseDataResultOrganizationUsageCodeInterpreterSessionsResult{},
	"file_search_calls":         openai.AdminOrganizationUsageFileSearchCallsResponseDataResultOrganizationUsageFileSearchesResult{},
	"web_search_calls":          openai.AdminOrganizationUsageWebSearchCallsResponseDataResultOrganizationUsageWebSearchesResult{},
}

// countFields are the integer JSON fields of a result type.
func countFields(v any) []string {
	var out []string
	t := reflect.TypeOf(v)
	for i := range t.NumField() {
		f := t.Field(i)
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); f.Type.Kind() == reflect.Int64 && name != "" {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func TestEndpointFieldsAreOpenAIGoTypes(t *testing.T) {
	// Given openai-go's result type of every usage endpoint,
	for name, typ := range resultTypes {
		t.Run(name, func(t *testing.T) {
			// when its integer fields are listed, then they are the fields
			// a meter of the endpoint may count.
			got := slices.Sorted(slices.Values(sums.OpenAIEndpoints[name].Fields))
			if want := countFields(typ); !slices.Equal(got, want) {
				t.Fatalf("sums.OpenAIEndpoints[%q].Fields = %v\nopenai-go's integer fields = %v", name, got, want)
			}
		})
	}
	// and the table has no endpoint openai-go lacks, costs aside.
	for name := range sums.OpenAIEndpoints {
		if _, ok := resultTypes[name]; !ok && name != sums.OpenAICosts {
			t.Errorf("endpoint %q is not one of openai-go's", name)
		}
	}
}

// rawPage is one page the face answers for q, unread.
func rawPage(t *testing.T, base string, q sums.Query) []byte {
	t.Helper()
	v := url.Values{"start_time": {strconv.FormatInt(q.Start.Unix(), 10)}, "end_time": {strconv.FormatInt(q.End.Unix(), 10)},
		"bucket_width": {map[time.Duration]string{time.Hour: "1h", sums.Day: "1d"}[q.Width]},
		"group_by[]":   {"project_id"}, "project_ids[]": {q.Ref}}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, base+openaiusage.Path(q.Meter.Endpoint)+"?"+v.Encode(), nil)
	req.Header.Set("Authorization", "Bearer "+providersim.OpenAIAdminKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	return body
}

func TestTheFaceAndTheReaderAgreeWithOpenAIGo(t *testing.T) {
	// Given the face with completions and costs of one project,
	clock := providersim.NewManualClock(day0.Add(3 * sums.Day))
	sim, err := providersim.New(providersim.Config{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	for h := range 5 {
		at := day0.Add(time.Duration(h) * time.Hour)
		if err := sim.AddOpenAIUsage(providersim.OpenAIUsage{Endpoint: "completions", Project: project, At: at,
			Fields: map[string]int64{"input_tokens": int64(1000 * h), "output_tokens": int64(h)}}); err != nil {
			t.Fatal(err)
		}
		if err := sim.AddOpenAICost(providersim.OpenAICost{Project: project, At: at, Value: "0.0125"}); err != nil {
			t.Fatal(err)
		}
	}
	r, err := openaiusage.New(openaiusage.Config{BaseURL: srv.URL, Key: providersim.OpenAIAdminKey})
	if err != nil {
		t.Fatal(err)
	}
	usage := usageQuery(tokens, day0, day0.Add(sums.Day), time.Hour)
	money := usageQuery(costs, day0, day0.Add(sums.Day), sums.Day)

	// when the pages are decoded with openai-go's types and read by the
	// reader,
	var page openai.AdminOrganizationUsageCompletionsResponse
	if err := json.Unmarshal(rawPage(t, srv.URL, usage), &page); err != nil {
		t.Fatal(err)
	}
	var costPage openai.AdminOrganizationUsageCostsResponse
	if err := json.Unmarshal(rawPage(t, srv.URL, money), &costPage); err != nil {
		t.Fatal(err)
	}
	gotUsage, err := r.Sums(t.Context(), usage)
	if err != nil {
		t.Fatal(err)
	}
	gotCosts, err := r.Sums(t.Context(), money)
	if err != nil {
		t.Fatal(err)
	}

	// then both read the same buckets and values.
	want := map[time.Time]float64{}
	for _, b := range page.Data {
		for _, res := range b.Results {
			c := res.AsOrganizationUsageCompletionsResult()
			if c.ProjectID != project || res.Object != "organization.usage.completions.result" {
				t.Fatalf("result %s", res.RawJSON())
			}
			want[time.Unix(b.StartTime, 0).UTC()] += float64(c.InputTokens + 4*c.OutputTokens)
		}
	}
	if len(page.Data) != 24 || page.HasMore || !reflect.DeepEqual(values(gotUsage), want) {
		t.Fatalf("openai-go reads %d buckets %v, the reader %v", len(page.Data), want, values(gotUsage))
	}
	if len(costPage.Data) != 1 || len(costPage.Data[0].Results) != 1 || len(gotCosts) != 1 {
		t.Fatalf("costs: openai-go %s, the reader %+v", costPage.RawJSON(), gotCosts)
	}
	c := costPage.Data[0].Results[0].AsOrganizationCostsResult()
	if c.Amount.Currency != "usd" || c.Amount.Value != gotCosts[0].Value || c.Amount.Value != 0.0625 {
		t.Fatalf("costs: openai-go reads %+v, the reader %v", c.Amount, gotCosts[0].Value)
	}
}

func TestTheReaderReadsOpenAIsDocumentedPage(t *testing.T) {
	// Given the example page of OpenAI's API reference, grouped by
	// project (testdata), which openai-go decodes,
	body, err := os.ReadFile("testdata/completions_page.json")
	if err != nil {
		t.Fatal(err)
	}
	var page openai.AdminOrganizationUsageCompletionsResponse
	if err := json.Unmarshal(body, &page); err != nil {
		t.Fatal(err)
	}
	srv, _ := fake(t, string(body))
	r, err := openaiusage.New(openaiusage.Config{BaseURL: srv.URL, Key: "sk-admin-k"})
	if err != nil {
		t.Fatal(err)
	}
	// when the reader reads it,
	start := time.Unix(page.Data[0].StartTime, 0).UTC()
	got, err := r.Sums(t.Context(), sums.Query{Meter: tokens, Ref: "proj_abc", Start: start, End: start.Add(sums.Day), Width: sums.Day})
	if err != nil {
		t.Fatal(err)
	}
	// then it counts what openai-go decodes: input + 4 × output.
	res := page.Data[0].Results[0].AsOrganizationUsageCompletionsResult()
	if len(got) != 1 || got[0].Value != float64(res.InputTokens+4*res.OutputTokens) || res.InputTokens == 0 {
		t.Fatalf("got %+v, openai-go reads %+v", got, res)
	}
}
