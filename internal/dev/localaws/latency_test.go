package localaws_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/hookline/hookline/internal/dev/localaws"
)

func TestLatencyInjection(t *testing.T) {
	if localaws.External() {
		t.Skip("injects latency into the embedded emulators only")
	}
	// Given local AWS started with HOOKLINE_LOCAL_AWS_LATENCY=40ms
	t.Setenv(localaws.LatencyEnv, "40ms")
	env := localaws.StartForTest(t)
	ctx := context.Background()

	// When one call is made to each service, then each takes at least the
	// injected latency
	start := time.Now()
	if _, err := env.DynamoDB.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(env.TableName("LedgerTable"))}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 40*time.Millisecond {
		t.Fatalf("DynamoDB call took %s, want >= 40ms", d)
	}
	start = time.Now()
	if _, err := env.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(env.QueueURL("usage"))}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 40*time.Millisecond {
		t.Fatalf("SQS call took %s, want >= 40ms", d)
	}
}

func TestLatencyFromEnvRefusesNonsense(t *testing.T) {
	t.Setenv(localaws.LatencyEnv, "fast")
	if _, err := localaws.LatencyFromEnv(); err == nil {
		t.Fatal("LatencyFromEnv accepted \"fast\"")
	}
}
