package reconcile

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/ddb"
	"github.com/hookline/hookline/internal/spend"
)

// The key layout of the reconciler's own items in the ledger table, spelled
// here once; the package documentation draws it as a table. A workload's
// schedule items share the workload's partition ([spend.WorkloadPK]).
const (
	pkCursor     = "RECON#cursor"
	skCursor     = "CURSOR"
	pkRuns       = "RECON#run"
	prefixRun    = "RUN#"
	skSchedule   = "SCHED"
	prefixChange = "SCHED#"
)

// cursorKey is the key of the export cursor.
func cursorKey() map[string]types.AttributeValue { return ddb.Key(pkCursor, skCursor) }

// runSK orders run records by start: "RUN#<started>#<run id>".
func runSK(started time.Time, runID string) string {
	return prefixRun + ddb.Stamp(started) + "#" + runID
}

// scheduleKey is the key of a workload's schedule item.
func scheduleKey(workloadID string) map[string]types.AttributeValue {
	return ddb.Key(spend.WorkloadPK(workloadID), skSchedule)
}

// changeSK orders a workload's interval changes: "SCHED#<at>#<run id>".
func changeSK(at time.Time, runID string) string {
	return prefixChange + ddb.Stamp(at) + "#" + runID
}

// The sums reconciler's items: one partition per source, holding its
// state and its runs ("RUN#<started>#<run id>").
const skSumsState = "STATE"

func sumsPK(source string) string { return "RECON#sums#" + source }
