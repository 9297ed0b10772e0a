package lambdalocal_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/hookline/hookline/internal/dev/lambdalocal"
)

func TestHTTPAPIPassesRawRequest(t *testing.T) {
	var got events.APIGatewayV2HTTPRequest
	var hadContext bool
	api := lambdalocal.NewHTTPAPI(lambdalocal.HTTPAPIConfig{Routes: []lambdalocal.HTTPRoute{{
		Method: "POST", Path: "/webhooks/{source}", Function: "Receiver",
		Handler: func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			got = req
			_, hadContext = lambdacontext.FromContext(ctx)
			return events.APIGatewayV2HTTPResponse{StatusCode: 202, Body: `{"ok":true}`, Headers: map[string]string{"Content-Type": "application/json"}}, nil
		},
	}}})
	srv := httptest.NewServer(api)
	defer srv.Close()

	tests := []struct {
		name        string
		contentType string
		body        []byte
		wantBase64  bool
	}{
		{"json stays a string byte for byte", "application/json", []byte("{\"a\": 1,\n \"b\":\"\u00e9\"}  "), false},
		{"binary is base64", "application/octet-stream", []byte{0, 1, 2, 0xff}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", srv.URL+"/webhooks/payments?x=1", bytes.NewReader(tc.body))
			req.Header.Set("Content-Type", tc.contentType)
			req.Header.Set("Webhook-Id", "msg_1")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 202 || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("status %d", resp.StatusCode)
			}
			body := []byte(got.Body)
			if got.IsBase64Encoded {
				body, _ = base64.StdEncoding.DecodeString(got.Body)
			}
			if got.IsBase64Encoded != tc.wantBase64 || !bytes.Equal(body, tc.body) {
				t.Fatalf("body = %q (base64 %v), want %q", got.Body, got.IsBase64Encoded, tc.body)
			}
			if got.Headers["webhook-id"] != "msg_1" || got.PathParameters["source"] != "payments" || got.RouteKey != "POST /webhooks/{source}" {
				t.Fatalf("request = %+v", got)
			}
			if got.RequestContext.RequestID == "" || got.RequestContext.TimeEpoch == 0 || !hadContext {
				t.Fatalf("request context incomplete: %+v", got.RequestContext)
			}
		})
	}
	t.Run("unknown route is 404", func(t *testing.T) {
		resp, err := http.Get(srv.URL + "/nope")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
}

func TestScheduleRates(t *testing.T) {
	tests := []struct {
		expr string
		want time.Duration
		ok   bool
	}{
		{"rate(1 minute)", time.Minute, true},
		{"rate(5 minutes)", 5 * time.Minute, true},
		{"rate(2 hours)", 2 * time.Hour, true},
		{"rate(0 minutes)", 0, false},
		{"cron(0 * * * ? *)", 0, false},
		{"rate(1 fortnight)", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			got, err := lambdalocal.ParseRate(tc.expr)
			if (err == nil) != tc.ok || got != tc.want {
				t.Fatalf("ParseRate = %v, %v", got, err)
			}
		})
	}
}

func TestScheduleFiresEventBridgeEvent(t *testing.T) {
	var got events.EventBridgeEvent
	s, err := lambdalocal.NewSchedule(lambdalocal.ScheduleConfig{
		Name: "reconcile", Expression: "rate(1 minute)", Function: "Reconciler",
		Handler: func(ctx context.Context, ev events.EventBridgeEvent) error { got = ev; return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	if err := s.Fire(context.Background(), at); err != nil {
		t.Fatal(err)
	}
	if got.DetailType != "Scheduled Event" || !got.Time.Equal(at) || len(got.Resources) != 1 {
		t.Fatalf("event = %+v", got)
	}
}
