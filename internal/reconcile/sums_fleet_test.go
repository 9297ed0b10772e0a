package reconcile_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/hookline/hookline/internal/dev/localaws"
)

// TestSumsRunListsTheFleetInOnePass: a run of a sums source lists every
// workload and its references to pick what it reads. It did so with a
// Query of each workload's aliases, every run, so a fleet of 10,000 cost
// 10,000 calls a run however few it read; now one scan of the workloads
// table lists them all, and no call on the workloads table's index is
// made per workload.
func TestSumsRunListsTheFleetInOnePass(t *testing.T) {
	t.Parallel()
	f := newSumsFixture(t)
	for i := range 30 {
		id := fmt.Sprintf("wl-%02d", i)
		f.workload(t, id, 1_000_000, "cus_"+id)
	}
	workloads := f.env.TableName("WorkloadsTable")
	var mu sync.Mutex
	calls := map[string]int{}
	stop := f.env.Calls.Tap(func(c localaws.Call) {
		var table string
		switch in := c.Input.(type) {
		case *dynamodb.QueryInput:
			table = aws.ToString(in.TableName)
			if in.IndexName != nil {
				table += "/" + aws.ToString(in.IndexName)
			}
		case *dynamodb.ScanInput:
			table = aws.ToString(in.TableName)
		default:
			return
		}
		mu.Lock()
		calls[c.Operation+" "+table]++
		mu.Unlock()
	})
	runs := f.run(t)
	stop()
	if len(runs) == 0 || runs[0].Workloads != 30 {
		t.Fatalf("runs %+v, want one that read the 30 workloads", runs)
	}
	if n := calls["Query "+workloads+"/gsi1"]; n != 0 {
		t.Errorf("%d queries of the workloads' index for one run of 30 workloads, want none", n)
	}
	if n := calls["Scan "+workloads]; n != 1 {
		t.Errorf("%d scans of the workloads table, want 1 (calls %v)", n, calls)
	}
	f.now = f.now.Add(time.Minute)
}
