package testkit

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/hookline/hookline/internal/awsconf"
)

// DeadSQS returns an SQS client whose endpoint refuses connections, with
// one attempt per call: SQS down, as a receiver meets it.
func DeadSQS(t testing.TB) *sqs.Client {
	t.Helper()
	cfg, err := awsconf.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Credentials = awsconf.Static()
	cfg.RetryMaxAttempts = 1
	return awsconf.SQS(cfg, "http://127.0.0.1:1")
}
