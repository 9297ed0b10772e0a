package admission_test

import (
	"context"
	"fmt"
	"log"

	"github.com/aws/aws-lambda-go/events"
	"github.com/hookline/hookline/internal/admission"
	"github.com/hookline/hookline/internal/spend"
)

func ExampleHandler_Handle() {
	// checker is a fixed table of workloads; the function passes a
	// spend.Reader.
	h, err := admission.New(checker{
		"wl_active": {Allowed: true, Status: "active", Attributed: 640, Cap: 1000},
		"wl_capped": {Allowed: false, Reason: spend.ReasonSpendCap, Status: "paused", Attributed: 1012, Cap: 1000},
	}, nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, id := range []string{"wl_active", "wl_capped", "wl_gone"} {
		req := events.APIGatewayV2HTTPRequest{PathParameters: map[string]string{"id": id}}
		req.RequestContext.HTTP.Method = "GET"
		resp, err := h.Handle(context.Background(), req)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(resp.StatusCode, resp.Body)
	}
	// Output:
	// 200 {"allowed":true,"status":"active","attributed":640,"cap":1000}
	// 423 {"allowed":false,"reason":"spend_cap","status":"paused","attributed":1012,"cap":1000}
	// 404 {"error":"unknown_workload"}
}
