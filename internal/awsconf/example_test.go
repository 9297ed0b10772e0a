package awsconf_test

import (
	"context"
	"log"

	"github.com/hookline/hookline/internal/awsconf"
)

func Example() {
	ctx := context.Background()
	cfg, err := awsconf.Load(ctx)
	if err != nil {
		log.Fatal(err)
	}
	// An empty endpoint keeps the SDK's own resolution, which honours
	// AWS_ENDPOINT_URL and AWS_ENDPOINT_URL_<SERVICE>.
	ddb := awsconf.DynamoDB(cfg, "")
	q := awsconf.SQS(cfg, "")
	_, _ = ddb, q
}
