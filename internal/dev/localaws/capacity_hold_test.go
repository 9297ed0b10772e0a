package localaws

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TestHoldPartitionAtLimit: a held partition answers as one past its
// budget until released, and no other partition is touched.
func TestHoldPartitionAtLimit(t *testing.T) {
	env, _ := startMetered(t)
	ctx := context.Background()
	table := env.TableName("LedgerTable")
	stop := HoldPartitionAtLimit(t, env, table, "hot")

	// While held, a write of the partition is throttled
	_, err := env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: row("hot", "1", 10)}, once)
	if _, ok := errors.AsType[*types.ProvisionedThroughputExceededException](err); !ok {
		t.Fatalf("put to a held partition: %v, want ProvisionedThroughputExceededException", err)
	}
	// and a transaction that writes it is cancelled for throttling on it
	_, err = env.DynamoDB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(table), Item: row("cold", "1", 10)}},
		{Put: &types.Put{TableName: aws.String(table), Item: row("hot", "2", 10)}},
	}}, once)
	if got := reasonCodes(err); got != "None,ThrottlingError" {
		t.Fatalf("transaction with a held partition: %v (reasons %s)", err, got)
	}
	// while another partition is served
	put(t, env, table, row("cold", "2", 10))

	// Once released, the partition is served again
	stop()
	put(t, env, table, row("hot", "3", 10))
}

// TestThrottlePartitionRequests: a partition throttled for n requests
// refuses exactly the next n that name it, and serves the one after.
func TestThrottlePartitionRequests(t *testing.T) {
	env, _ := startMetered(t)
	ctx := context.Background()
	table := env.TableName("LedgerTable")
	ThrottlePartitionRequests(t, env, table, "hot", 2)
	put(t, env, table, row("cold", "1", 10))
	for i := range 2 {
		_, err := env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: row("hot", "1", 10)}, once)
		if _, ok := errors.AsType[*types.ProvisionedThroughputExceededException](err); !ok {
			t.Fatalf("request %d to a throttled partition: %v, want ProvisionedThroughputExceededException", i+1, err)
		}
	}
	put(t, env, table, row("hot", "2", 10))
	if got := env.Capacity().Tables[table].WriteThrottles; got != 2 {
		t.Fatalf("write throttles %d, want 2", got)
	}
}
