package omoracle

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	legacyrouter "github.com/getkin/kin-openapi/routers/legacy"

	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/internal/openmeter"
	"github.com/hookline/hookline/internal/sums"
	"github.com/hookline/hookline/internal/usagein"
	"github.com/hookline/hookline/pkg/provider"
)

func loadSpec(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromFile("testdata/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// OpenMeter's own examples break some of its patterns
	// ("example-feature-key"); the schemas themselves are checked.
	if err := doc.Validate(context.Background(), openapi3.DisableExamplesValidation()); err != nil {
		t.Fatalf("the spec fragment is not valid OpenAPI: %v", err)
	}
	return doc
}

// checked is a proxy in front of the face that validates every request
// and answer against the spec and records what failed.
type checked struct {
	router routers.Router
	face   http.Handler

	mu       sync.Mutex
	calls    map[string]int
	failures []string
}

func (c *checked) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	route, params, err := c.router.FindRoute(r)
	if err != nil {
		c.fail(r.Method + " " + r.URL.Path + ": no such operation in the spec: " + err.Error())
		http.Error(w, "no route", http.StatusNotFound)
		return
	}
	in := &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
	if err := openapi3filter.ValidateRequest(r.Context(), in); err != nil {
		c.fail("request " + route.Operation.OperationID + ": " + err.Error())
	}
	rec := httptest.NewRecorder()
	c.face.ServeHTTP(rec, r)
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: rec.Code, Header: rec.Header(),
		Options: &openapi3filter.Options{IncludeResponseStatus: true}}
	out.SetBodyBytes(rec.Body.Bytes())
	if err := openapi3filter.ValidateResponse(r.Context(), out); err != nil {
		c.fail("answer " + route.Operation.OperationID + ": " + err.Error())
	}
	c.mu.Lock()
	c.calls[route.Operation.OperationID]++
	c.mu.Unlock()
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	_, _ = io.Copy(w, rec.Body)
}

func (c *checked) fail(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failures = append(c.failures, s)
}

func TestTheAdapterAndTheFaceSpeakOpenMetersSpec(t *testing.T) {
	doc := loadSpec(t)
	router, err := legacyrouter.NewRouter(doc, openapi3.DisableExamplesValidation())
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 3, 12, 0, 0, 0, time.UTC)
	clock := providersim.NewManualClock(t0)
	face := providersim.NewOpenMeter(providersim.OpenMeterConfig{Now: clock.Now})
	if err := face.AddMeter(providersim.OpenMeterMeter{Slug: "tokens_total", EventType: "com.example.tokens", Aggregation: "SUM"}); err != nil {
		t.Fatal(err)
	}
	proxy := &checked{router: router, face: face.Handler(), calls: map[string]int{}}
	srv := httptest.NewServer(proxy)
	defer srv.Close()
	// Given events over three pages, one stored between two pages
	for i, id := range []string{"a", "b", "c", "d", "e"} {
		ev := providersim.UsageCloudEvent{Source: "/m", ID: id, Type: "com.example.tokens", Subject: "wl-a",
			Time: t0.Add(time.Duration(i) * time.Minute), Value: "1.5"}
		if _, err := face.Ingest(ev); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(time.Hour)
	ms, err := usagein.ParseMappings([]byte(`{"meters": {"format": "cloudevents", "usage_types": ["com.example.tokens"], "scale": 1000, "unit": "units"}}`))
	if err != nil {
		t.Fatal(err)
	}
	c, err := openmeter.New(openmeter.Config{BaseURL: srv.URL, Source: "meters", Mapping: ms.For("meters"), PageLimit: 2})
	if err != nil {
		t.Fatal(err)
	}
	// When the adapter lists them and reads the meter
	var n int
	if err := c.ListUsage(context.Background(), t0.Add(-time.Minute), t0.Add(30*time.Minute), func(recs []provider.UsageRecord) error {
		n += len(recs)
		return nil
	}); err != nil || n != 5 {
		t.Fatalf("listed %d, %v", n, err)
	}
	r, err := openmeter.NewReader(openmeter.Config{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.Sums(context.Background(), sums.Query{Meter: sums.Meter{ProviderMeter: "tokens_total"}, Ref: "wl-a",
		Start: t0, End: t0.Add(time.Hour), Width: time.Hour})
	if err != nil || len(got) != 1 || got[0].Value != 7.5 {
		t.Fatalf("sums %+v, %v", got, err)
	}
	// Then every request and answer is one the spec allows.
	if len(proxy.failures) > 0 {
		t.Fatalf("outside the spec:\n%v", proxy.failures)
	}
	if proxy.calls["listEventsV2"] < 3 || proxy.calls["queryMeter"] != 1 {
		t.Fatalf("calls %v: want the pages and the meter query checked", proxy.calls)
	}
}

func TestThresholdNotificationsMatchTheirSchema(t *testing.T) {
	doc := loadSpec(t)
	schema := doc.Components.Schemas["NotificationEventBalanceThresholdPayload"].Value
	// The spec's pattern for an entitlement's subjectKey allows no '-'
	// (its own example, customer-1, has one): the key here has none.
	sim, err := providersim.OpenMeterThreshold{ID: "01J0THRE5H0000000000000000", Subject: "wl_a", MeterSlug: "tokens_total",
		Usage: "150.5", PeriodFrom: time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC), PeriodTo: time.Date(2026, 11, 4, 0, 0, 0, 0, time.UTC),
		At: time.Date(2026, 11, 3, 12, 0, 0, 0, time.UTC)}.Body()
	if err != nil {
		t.Fatal(err)
	}
	fixture, err := os.ReadFile("../testdata/balance_threshold.json")
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string][]byte{"simulator": sim, "fixture": fixture} {
		t.Run(name, func(t *testing.T) {
			var v any
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.UseNumber()
			if err := dec.Decode(&v); err != nil {
				t.Fatal(err)
			}
			if err := schema.VisitJSON(v, openapi3.VisitAsResponse(), openapi3.MultiErrors()); err != nil {
				t.Fatalf("outside NotificationEventBalanceThresholdPayload: %v", err)
			}
			if _, err := openmeter.ParseAlert(body); err != nil {
				t.Fatalf("hookline refuses a valid notification: %v", err)
			}
		})
	}
}
