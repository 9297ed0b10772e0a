package stripecharge_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/hookline/hookline/internal/awsconf"
	"github.com/hookline/hookline/internal/paymentworker"
	"github.com/hookline/hookline/internal/stripecharge"
	"github.com/hookline/hookline/pkg/idempotency"
	"github.com/hookline/hookline/pkg/queue"
)

// The payment worker charges through Stripe when its Provider is a Client.
// Stripe's search lags its commits, so the settle horizon is 90s (the
// default of PROVIDER_SETTLE_HORIZON with PAYMENT_PROVIDER=stripe).
func Example() {
	ctx := context.Background()
	cfg, err := awsconf.Load(ctx)
	if err != nil {
		log.Fatal(err)
	}
	store, err := idempotency.NewDynamoDB(idempotency.DynamoDBConfig{Client: awsconf.DynamoDB(cfg, ""), Table: "hookline-idempotency"})
	if err != nil {
		log.Fatal(err)
	}
	horizon, skew := 90*time.Second, time.Second
	reg, err := idempotency.New(idempotency.Config{
		Store: store, Namespace: "payments", InProgressTimeout: 150 * time.Second, DeadlineMargin: horizon + skew,
	})
	if err != nil {
		log.Fatal(err)
	}
	q, err := queue.New(queue.Config{
		SQS:           awsconf.SQS(cfg, ""),
		URL:           "https://sqs.eu-west-1.amazonaws.com/123456789012/payments",
		DeadLetterURL: "https://sqs.eu-west-1.amazonaws.com/123456789012/payments-dlq",
	})
	if err != nil {
		log.Fatal(err)
	}

	c, err := stripecharge.New(stripecharge.Config{APIKey: "sk_test_123"})
	if err != nil {
		log.Fatal(err)
	}
	w, err := paymentworker.New(paymentworker.Config{Registry: reg, Provider: c, Queue: q, Horizon: horizon, ClockSkew: skew})
	if err != nil {
		log.Fatal(err)
	}
	lambda.Start(w.Handle)
}

func ExampleSearchQuery() {
	fmt.Println(stripecharge.SearchQuery(paymentworker.ProviderKey("payments", "evt_1", 1)))
	fmt.Println(stripecharge.SearchQuery(`payments:it's`)) // a legacy key
	// Output:
	// metadata['hookline_pkey']:'hl1_83455ee756bdd621209a30e457438c0f3504cbb5c056779dc3f3dbcfe65d273b'
	// metadata['hookline_key']:'payments:it\'s'
}
