package testkit

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/hookline/hookline/internal/awsconf"
)

// deadEndpoint refuses connections: a dependency that is down.
const deadEndpoint = "http://127.0.0.1:1"

// DeadSQS returns an SQS client whose endpoint refuses connections, with
// one attempt per call: SQS down, as a receiver meets it.
func DeadSQS(t testing.TB) *sqs.Client { return awsconf.SQS(deadConfig(t), deadEndpoint) }

// DeadDynamoDB is [DeadSQS] for DynamoDB.
func DeadDynamoDB(t testing.TB) *dynamodb.Client {
	return awsconf.DynamoDB(deadConfig(t), deadEndpoint)
}

func deadConfig(t testing.TB) aws.Config {
	t.Helper()
	cfg, err := awsconf.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Credentials = awsconf.Static()
	cfg.RetryMaxAttempts = 1
	return cfg
}
