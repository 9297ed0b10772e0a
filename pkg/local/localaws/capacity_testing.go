package localaws

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// HoldPartitionAtLimit writes 1 KB items (sort keys "hold-N") to the
// partition pk of a table with a partition and a sort key named pk and
// sk, from two goroutines, as fast as the embedded DynamoDB answers, so
// that the partition stays at DynamoDB's limit of 1,000 write units a
// second and nearly every other write to it is throttled. It returns once
// the partition has throttled a write, with the function that stops it:
// for tests of how production code meets ThrottlingError and
// ProvisionedThroughputExceededException.
func HoldPartitionAtLimit(t testing.TB, env *Env, table, pk string) (stop func()) {
	t.Helper()
	var done atomic.Bool
	var throttled, n atomic.Int64
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for !done.Load() {
				_, err := env.DynamoDB.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table),
					Item: map[string]types.AttributeValue{
						"pk":   &types.AttributeValueMemberS{Value: pk},
						"sk":   &types.AttributeValueMemberS{Value: fmt.Sprintf("hold-%d", n.Add(1))},
						"data": &types.AttributeValueMemberS{Value: strings.Repeat("x", 900)}}},
					func(o *dynamodb.Options) { o.Retryer = aws.NopRetryer{} })
				if _, ok := errors.AsType[*types.ProvisionedThroughputExceededException](err); ok {
					throttled.Add(1)
				}
			}
		})
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			done.Store(true)
			wg.Wait()
		})
	}
	for deadline := time.Now().Add(10 * time.Second); throttled.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("partition %s of %s never met its limit", pk, table)
		}
	}
	return stop
}
