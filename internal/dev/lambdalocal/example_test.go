package lambdalocal_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/hookline/hookline/internal/dev/lambdalocal"
)

// receive is a Lambda handler behind an HTTP API route.
func receive(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	_, hasDeadline := ctx.Deadline()
	lc, _ := lambdacontext.FromContext(ctx)
	body := fmt.Sprintf("source=%s body=%s deadline=%t request_id=%t\n",
		req.PathParameters["source"], req.Body, hasDeadline, lc.AwsRequestID != "")
	return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusAccepted, Body: body}, nil
}

// Serve the routes on a local port, as the HTTP API would.
func Example() {
	routes := []lambdalocal.HTTPRoute{
		{Method: "POST", Path: "/webhooks/{source}", Function: "receiver", Handler: receive, Timeout: 10 * time.Second},
	}
	api := lambdalocal.NewHTTPAPI(lambdalocal.HTTPAPIConfig{Routes: routes})
	log.Fatal(http.ListenAndServe("127.0.0.1:8080", api))
}

// An HTTPAPI is an http.Handler, so it can also be called directly.
func ExampleNewHTTPAPI() {
	api := lambdalocal.NewHTTPAPI(lambdalocal.HTTPAPIConfig{Routes: []lambdalocal.HTTPRoute{
		{Method: "POST", Path: "/webhooks/{source}", Function: "receiver", Handler: receive},
	}})

	req := httptest.NewRequest("POST", "/webhooks/payments", strings.NewReader(`{"id":"evt_1"}`))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	api.ServeHTTP(rec, req)
	fmt.Print(rec.Code, " ", rec.Body.String())
	// Output:
	// 202 source=payments body={"id":"evt_1"} deadline=true request_id=true
}
