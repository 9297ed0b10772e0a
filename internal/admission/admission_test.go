package admission_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookline/hookline/internal/admission"
	"github.com/hookline/hookline/internal/spend"
)

// checker answers from a fixed table; the ledger itself is tested on local
// AWS in internal/spend and end to end in internal/dev/localrun.
type checker map[string]spend.Admission

func (c checker) Admission(_ context.Context, id string) (spend.Admission, error) {
	if id == "broken" {
		return spend.Admission{}, errors.New("dynamodb: connection refused")
	}
	a, ok := c[id]
	if !ok {
		return spend.Admission{}, spend.ErrUnknownWorkload
	}
	return a, nil
}

func TestAdmission(t *testing.T) {
	h, err := admission.New(checker{
		"active": {Allowed: true, Status: "active", Attributed: 640, Cap: 1000},
		"monthly": {Allowed: true, Status: "active", Attributed: 3, Cap: 1000,
			Period:    "2026-11-30T00:00:00-08:00/2026-12-31T00:00:00-08:00",
			PeriodEnd: time.Date(2026, 12, 31, 8, 0, 0, 0, time.UTC)},
		"paused": {Allowed: false, Reason: spend.ReasonSpendCap, Status: "paused", Attributed: 1012, Cap: 1000},
		// created before workload IDs had an alphabet: it keeps working
		"Legacy Images": {Allowed: true, Status: "active", Attributed: 1, Cap: 1000},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, id, method string
		wantStatus       int
		wantBody         string
	}{
		{"allowed", "active", "GET", 200, `{"allowed":true,"status":"active","attributed":640,"cap":1000}`},
		{"the current period's total, cap and end", "monthly", "GET", 200, `{"allowed":true,"status":"active","attributed":3,"cap":1000,"period":"2026-11-30T00:00:00-08:00/2026-12-31T00:00:00-08:00","period_end":"2026-12-31T08:00:00Z"}`},
		{"paused by its cap", "paused", "GET", 423, `{"allowed":false,"reason":"spend_cap","status":"paused","attributed":1012,"cap":1000}`},
		{"unknown workload", "nope", "GET", 404, `{"error":"unknown_workload"}`},
		{"malformed ID", "images!", "GET", 400, `{"error":"invalid_workload_id"}`},
		{"too long an ID", strings.Repeat("w", 600), "GET", 400, `{"error":"invalid_workload_id"}`},
		{"longer than any key", strings.Repeat("w", 3000), "GET", 400, `{"error":"invalid_workload_id"}`},
		{"legacy ID outside the alphabet", "Legacy Images", "GET", 200, `{"allowed":true,"status":"active","attributed":1,"cap":1000}`},
		{"ledger down", "broken", "GET", 503, `{"error":"unavailable"}`},
		{"wrong method", "active", "POST", 405, `{"error":"method_not_allowed"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := events.APIGatewayV2HTTPRequest{PathParameters: map[string]string{"id": tc.id},
				RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: tc.method}}}
			resp, err := h.Handle(context.Background(), req)
			if err != nil || resp.StatusCode != tc.wantStatus || resp.Body != tc.wantBody {
				t.Fatalf("got %d %s (%v), want %d %s", resp.StatusCode, resp.Body, err, tc.wantStatus, tc.wantBody)
			}
		})
	}
}
