package spend

import (
	"context"
	"testing"

	"github.com/hookline/hookline/internal/dev/localaws"
)

// TestWorkloadWritesRetryAThrottlingCancellation: DynamoDB cancels a
// transaction that lacks throughput with the reason ThrottlingError (API
// reference, TransactWriteItems), which says nothing about the
// conditions. Creating a workload or adding an alias must retry it, not
// read it as a taken alias.
func TestWorkloadWritesRetryAThrottlingCancellation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		alias string // the partition that is driven to its limit
		run   func(*Spend) error
	}{
		{"create workload", "ALIAS#w-hot", func(s *Spend) error {
			_, err := s.Workloads.CreateWorkload(context.Background(), NewWorkload{ID: "w-hot", Owner: "o", RoutingKey: "rk", Cap: 100})
			return err
		}},
		{"add alias", "ALIAS#ref-hot", func(s *Spend) error {
			return s.Workloads.AddAlias(context.Background(), "ref-hot", "w1")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Given a workload, and the alias's partition throttling its
			// next three requests
			env := localaws.StartForTest(t)
			f := newFixtureOn(t, env, nil)
			f.workload(t, "w1", 1000, 0)
			localaws.ThrottlePartitionRequests(t, env, env.TableName("WorkloadsTable"), tt.alias, 3)
			// When the workload write runs in that window
			err := tt.run(f.s)
			// Then it succeeds once the partition has capacity again
			if err != nil {
				t.Fatalf("%s under throttling: %v", tt.name, err)
			}
			if got := env.Capacity().Tables[env.TableName("WorkloadsTable")].WriteThrottles; got != 3 {
				t.Fatalf("%s met %d throttles, want 3: the test did not drive the retry", tt.name, got)
			}
		})
	}
}
