package spend

import (
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/ddb"
)

// The key layout of the workloads and ledger tables. Every pk, sk, gsi1pk
// and gsi1sk this package writes or queries is spelled here once; the
// package documentation draws the same layout as a table.

// indexName is the one GSI of both tables (gsi1pk, gsi1sk).
const indexName = "gsi1"

// Fixed sort keys, one per item kind.
const (
	skWorkload    = "WORKLOAD"
	skAlias       = "ALIAS"
	skEntry       = "ENTRY"
	skDeferred    = "DEFERRED"
	skUnconfirmed = "UNCONFIRMED"
	skQuarantine  = "QUARANTINE"
	// skEventRef is the sort key of an event reference: the item that lets
	// a webhook event ID find a record that never became a ledger entry.
	skEventRef = "EVENTREF"
)

// Fixed partitions of gsi1, and the run schedule's one item.
const (
	// workloadsPartition holds every workload's key (workloads table).
	workloadsPartition = "WORKLOADS"
	deferredOpen       = "DEFERRED#open"
	deferredResolved   = "DEFERRED#resolved"
	quarantinePart     = "QUARANTINE"
	// pkRunSchedule is the pk and sk of the published [RunSchedule].
	pkRunSchedule = "RECON#schedule"
)

// Key prefixes; an item's key is a prefix and an ID.
const (
	prefixWorkload    = "WL#"
	prefixAlias       = "ALIAS#"
	prefixAliases     = "ALIASES#"
	prefixRecord      = "REC#"
	prefixEvent       = "EVENT#"
	prefixEventRef    = "REF#"
	prefixDecision    = "DECISION#"
	prefixReconRun    = "RECON#"
	prefixDisagree    = "DISAGREE#"
	prefixUnconfirmed = "UNCONFIRMED#"
	prefixConfirmed   = "CONFIRMED#"
	prefixUnseen      = "UNSEEN#"
)

// WorkloadPK is the partition key of a workload's items, "WL#<id>", in
// both tables: the workload itself (workloads table), and its decisions
// and reconciliation records (ledger table), beside which the reconciler
// keeps its schedule items.
func WorkloadPK(id string) string { return prefixWorkload + id }

// recordPK is the partition of one usage record's ledger items: its entry,
// marker, deferral, disagreements, quarantine and event reference.
func recordPK(rec string) string { return prefixRecord + rec }

// eventPK is the gsi1 partition that finds a webhook event's entry,
// decisions and event reference.
func eventPK(eventID string) string { return prefixEvent + eventID }

func aliasPK(ref string) string         { return prefixAlias + ref }
func aliasesPK(id string) string        { return prefixAliases + id }
func disagreePK(id string) string       { return prefixDisagree + id }
func eventRefSK(rec string) string      { return prefixEventRef + rec }
func reconRunSK(at time.Time) string    { return prefixReconRun + ddb.Stamp(at) }
func entryGSI1SK(rec string) string     { return prefixRecord + rec }
func unconfirmedPK(shard string) string { return prefixUnconfirmed + shard }
func confirmedPK(shard string) string   { return prefixConfirmed + shard }
func unseenPK(shard string) string      { return prefixUnseen + shard }

func disagreeSK(otherWorkload string, units int64) string {
	return prefixDisagree + otherWorkload + "#" + strconv.FormatInt(units, 10)
}

func decisionSK(epoch, step int64) string {
	return fmt.Sprintf("%s%08d#%06d", prefixDecision, epoch, step)
}

func workloadKey(id string) map[string]types.AttributeValue {
	return ddb.Key(WorkloadPK(id), skWorkload)
}
func aliasKey(ref string) map[string]types.AttributeValue { return ddb.Key(aliasPK(ref), skAlias) }
func entryKey(rec string) map[string]types.AttributeValue { return ddb.Key(recordPK(rec), skEntry) }
func deferredKey(rec string) map[string]types.AttributeValue {
	return ddb.Key(recordPK(rec), skDeferred)
}
func markerKey(rec string) map[string]types.AttributeValue {
	return ddb.Key(recordPK(rec), skUnconfirmed)
}
func quarantineKey(rec string) map[string]types.AttributeValue {
	return ddb.Key(recordPK(rec), skQuarantine)
}

// stampedSK is a gsi1 sort key that orders a partition by time:
// "<stamp>#<record>".
func stampedSK(stamp, rec string) string { return stamp + "#" + rec }

// stampedUpTo is the upper bound of the stamped sort keys at or before t.
func stampedUpTo(t time.Time) string { return ddb.Stamp(t) + "#\uffff" }

// openDeferredDue is the key condition of the open deferred records whose
// deadline is at or before due (zero: all) in the ledger's gsi1.
func openDeferredDue(due time.Time) expression.KeyConditionBuilder {
	kc := expression.Key("gsi1pk").Equal(expression.Value(deferredOpen))
	if !due.IsZero() {
		kc = kc.And(expression.Key("gsi1sk").LessThanEqual(expression.Value(stampedUpTo(due))))
	}
	return kc
}

// Bucket keys (bucket.go): a bucket's head, revisions, deltas, downward
// revisions and settle-time disagreements share its partition
// BKT#<workload>#<source>#<account>#<mode>#<meter>#<start>. The head sits
// in gsi1 under BKTOPEN#<workload> until it is settled, then under
// BKTS#<workload>, sorted by start; a delta sits under DELTA#<delta ID>,
// so that `event explain` finds it.
const (
	skHead             = "HEAD"
	prefixBucket       = "BKT#"
	prefixBucketsOpen  = "BKTOPEN#"
	prefixBucketsDone  = "BKTS#"
	prefixRev          = "REV#"
	prefixDeltaPoll    = "DELTA#poll#"
	prefixDeltaRecord  = "DELTA#rec#"
	prefixDown         = "DOWN#"
	prefixDeltaID      = "DELTA#"
	prefixBucketDisagr = "GAP#"
	prefixAlert        = "ALERT#"
	prefixAlerts       = "ALERTS#"
	skAlert            = "ALERT"
)

func bucketPK(k BucketKey) string {
	return prefixBucket + k.WorkloadID + "#" + k.Source + "#" + k.Account + "#" + k.Mode + "#" + k.Meter + "#" +
		ddb.Stamp(k.Start)
}
func bucketsOpen(id string) string        { return prefixBucketsOpen + id }
func bucketsSettled(id string) string     { return prefixBucketsDone + id }
func revSK(n int64) string                { return fmt.Sprintf("%s%08d", prefixRev, n) }
func pollDeltaSK(n int64) string          { return fmt.Sprintf("%s%08d", prefixDeltaPoll, n) }
func recordDeltaSK(rec string) string     { return prefixDeltaRecord + rec }
func downSK(n int64) string               { return fmt.Sprintf("%s%08d", prefixDown, n) }
func bucketGapSK(rev int64) string        { return fmt.Sprintf("%s%08d", prefixBucketDisagr, rev) }
func deltaGSI1PK(deltaID string) string   { return prefixDeltaID + deltaID }
func alertPK(source, event string) string { return prefixAlert + source + "#" + event }
func alertsPK(id string) string           { return prefixAlerts + id }

// bucketGSI1SK sorts a workload's buckets by start.
func bucketGSI1SK(k BucketKey) string {
	return ddb.Stamp(k.Start) + "#" + k.Source + "#" + k.Mode + "#" + k.Meter
}

// sumsDuePK holds the due markers of a sums source: one item per workload
// (sk is the workload ID) that an alert asked to be read on the next run.
func sumsDuePK(source string) string { return "SUMSDUE#" + source }
