package spend

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

	"github.com/hookline/hookline/pkg/local/localaws"
)

// hammer writes 1 KB items to one partition of table from two goroutines,
// as fast as the local DynamoDB answers, so that the partition stays at
// its limit of 1,000 write units a second (developer guide, "Best
// practices for designing and using partition keys effectively"). It
// returns once the partition has throttled a write, and the function
// that stops it.
func hammer(t *testing.T, env *localaws.Env, table, pk string) (stop func()) {
	t.Helper()
	var done atomic.Bool
	var throttled atomic.Int64
	var wg sync.WaitGroup
	var n atomic.Int64
	for range 2 {
		wg.Go(func() {
			for !done.Load() {
				_, err := env.DynamoDB.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table),
					Item: map[string]types.AttributeValue{
						"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: fmt.Sprintf("fill-%d", n.Add(1))},
						"data": &types.AttributeValueMemberS{Value: strings.Repeat("x", 900)}}},
					func(o *dynamodb.Options) { o.Retryer = aws.NopRetryer{} })
				if _, ok := errors.AsType[*types.ProvisionedThroughputExceededException](err); ok {
					throttled.Add(1)
				}
			}
		})
	}
	for deadline := time.Now().Add(10 * time.Second); throttled.Load() == 0; {
		if time.Now().After(deadline) {
			done.Store(true)
			wg.Wait()
			t.Fatal("the hammer never met the partition's limit")
		}
		time.Sleep(time.Millisecond)
	}
	return func() {
		done.Store(true)
		wg.Wait()
	}
}

// TestWorkloadWritesRetryAThrottlingCancellation: DynamoDB cancels a
// transaction that lacks throughput with the reason ThrottlingError (API
// reference, TransactWriteItems), which says nothing about the
// conditions. Creating a workload or adding an alias must retry it, not
// read it as a taken alias.
func TestWorkloadWritesRetryAThrottlingCancellation(t *testing.T) {
	tests := []struct {
		name  string
		alias string // the partition that is driven to its limit
		run   func(*Spend) error
	}{
		{"create workload", "ALIAS#w-hot", func(s *Spend) error {
			_, err := s.Workloads.CreateWorkload(context.Background(), NewWorkload{ID: "w-hot", Owner: "o", Route: "rk", Cap: 100})
			return err
		}},
		{"add alias", "ALIAS#ref-hot", func(s *Spend) error {
			return s.Workloads.AddAlias(context.Background(), "ref-hot", "w1")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Given a workload, and the alias's partition held at its limit
			// by another writer for 300 ms
			env := localaws.StartForTest(t)
			f := newFixtureOn(t, env, nil)
			f.workload(t, "w1", 1000, 0)
			stop := hammer(t, env, env.TableName("WorkloadsTable"), tt.alias)
			time.AfterFunc(300*time.Millisecond, stop)
			defer stop()
			// When the workload write runs in that window
			err := tt.run(f.s)
			// Then it succeeds once the partition has capacity again
			if err != nil {
				t.Fatalf("%s under throttling: %v", tt.name, err)
			}
		})
	}
}
