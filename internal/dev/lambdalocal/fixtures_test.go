package lambdalocal_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookline/hookline/internal/dev/lambdalocal"
	"github.com/hookline/hookline/internal/dev/localaws"
)

// The fixtures in testdata/events are events as AWS delivers them to a
// function: an HTTP API (payload 2.0) request, an SQS batch from an event
// source mapping, and EventBridge Scheduler's default notification. Each
// local adapter must hand its function an event with at least the same
// fields, so that a handler tested locally reads what it will read in AWS.

// fixture reads testdata/events/name as generic JSON.
func fixture(t *testing.T, name string) map[string]any {
	t.Helper()
	data, err := os.ReadFile("../../../testdata/events/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}

// asJSON turns an event into generic JSON, as the runtime would send it.
func asJSON(t *testing.T, ev any) map[string]any {
	t.Helper()
	data, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// missingFields lists the paths of want's fields that got lacks, or has
// empty where want's is not. Under the maps whose keys are data (headers,
// attributes, ...) only the named keys are compared.
func missingFields(want, got any, path string, dataKeys map[string][]string) []string {
	w, ok := want.(map[string]any)
	if !ok {
		if ws, ok := want.([]any); ok && len(ws) > 0 {
			if gs, ok := got.([]any); ok && len(gs) > 0 {
				return missingFields(ws[0], gs[0], path+"[0]", dataKeys)
			}
			return []string{path + "[0]"}
		}
		if !empty(want) && empty(got) {
			return []string{path + " (empty)"}
		}
		return nil
	}
	g, _ := got.(map[string]any)
	keys := make([]string, 0, len(w))
	for k := range w {
		keys = append(keys, k)
	}
	if only, ok := dataKeys[lastName(path)]; ok {
		keys = only
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		gv, present := g[k]
		if !present {
			out = append(out, path+"."+k)
			continue
		}
		out = append(out, missingFields(w[k], gv, path+"."+k, dataKeys)...)
	}
	return out
}

func empty(v any) bool { return v == nil || v == "" || v == 0.0 }

func lastName(path string) string {
	path = strings.TrimSuffix(path, "[0]")
	return path[strings.LastIndex(path, ".")+1:]
}

func checkShape(t *testing.T, fixtureName string, local any, dataKeys map[string][]string) {
	t.Helper()
	if missing := missingFields(fixture(t, fixtureName), asJSON(t, local), "", dataKeys); len(missing) > 0 {
		t.Fatalf("the local event lacks fields AWS sends (%s): %s", fixtureName, strings.Join(missing, ", "))
	}
}

func TestHTTPAPIEventHasAWSsFields(t *testing.T) {
	var got events.APIGatewayV2HTTPRequest
	api := lambdalocal.NewHTTPAPI(lambdalocal.HTTPAPIConfig{Routes: []lambdalocal.HTTPRoute{{
		Method: "ANY", Path: "/webhooks/{source}", Function: "ReceiverFunction",
		Handler: func(_ context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			got = req
			return events.APIGatewayV2HTTPResponse{StatusCode: 200}, nil
		},
	}}})
	srv := httptest.NewServer(api)
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/webhooks/payments", "application/json", strings.NewReader(`{"id":"evt_1"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	checkShape(t, "http-api-request.json", got, map[string][]string{
		"headers": {"content-type", "host", "user-agent"}, "pathParameters": {"source"},
	})
	if got.RouteKey != "ANY /webhooks/{source}" || got.PathParameters["source"] != "payments" || got.RequestContext.HTTP.Method != "POST" {
		t.Fatalf("route %q, params %v, method %q", got.RouteKey, got.PathParameters, got.RequestContext.HTTP.Method)
	}
}

func TestSQSEventHasAWSsFields(t *testing.T) {
	env := localaws.StartForTest(t)
	url := env.QueueURL("payments")
	sendBodies(t, env, url, `{"id":"evt_shape"}`)
	var mu sync.Mutex
	var got events.SQSEvent
	runMapping(t, lambdalocal.SQSMappingConfig{SQS: env.SQS, QueueURL: url, QueueARN: env.QueueARN("payments"), Function: "PaymentWorkerFunction",
		ReportBatchItemFailures: true, Timeout: 5 * time.Second,
		Handler: func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			mu.Lock()
			defer mu.Unlock()
			got = ev
			return events.SQSEventResponse{}, nil
		},
	}, func() bool { mu.Lock(); defer mu.Unlock(); return len(got.Records) > 0 })
	checkShape(t, "sqs-batch.json", got, map[string][]string{
		"attributes":        {"ApproximateReceiveCount", "SentTimestamp", "ApproximateFirstReceiveTimestamp"},
		"messageAttributes": {"source"},
	})
}

func TestScheduleEventHasAWSsFields(t *testing.T) {
	var got events.EventBridgeEvent
	s, err := lambdalocal.NewSchedule(lambdalocal.ScheduleConfig{Name: "hookline-reconcile", Expression: "rate(5 minutes)",
		Function: "ReconcilerFunction", Timeout: time.Second,
		Handler: func(_ context.Context, ev events.EventBridgeEvent) error { got = ev; return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Fire(context.Background(), time.Now()); err != nil {
		t.Fatal(err)
	}
	checkShape(t, "schedule-event.json", got, nil)
	if got.Source != "aws.scheduler" || got.DetailType != "Scheduled Event" || len(got.Resources) != 1 {
		t.Fatalf("event %+v", got)
	}
}
