// Package spend keeps hookline's usage ledger and enforces spend caps.
//
// One definition of spend: every usage record, whether the webhook path or
// the polling path saw it first, goes through [Ledger.Apply]. The ledger entry
// is keyed by the provider's usage record ID, and the entry and the
// workload's running total change in one TransactWriteItems, so one record
// has one ledger effect. Apply reports one of four outcomes:
//
//   - [Applied]: a new effect; the result carries the new total.
//   - [Duplicate]: the same record with the same units and workload; no
//     effect, counted once.
//   - [Disagreement]: the same record ID with other units or another
//     workload; not applied. Both versions are recorded and a page goes to
//     the reconciliation owner. The first number is kept until an operator
//     decides; the last one to arrive never silently wins.
//   - [Deferred]: the reference names no workload, or a retired one. The
//     record is kept with a deadline, a reason and an owner, and is never
//     attributed to anyone else.
//
// When an Apply pushes a workload's total over its cap (total > cap; equal
// is not over), the workload moves from active to paused with a conditional
// update on (status, cap epoch, cap), so exactly one of many concurrent
// crossings wins. The pause, its durable [Decision] and the outbox page (see
// package pager) commit in one TransactWriteItems. Spend is still recorded
// while paused; each time the total passes cap + k*step for a new k, one
// more page (action "escalate") is sent under its own dedup key. An
// operator's [Caps.Resume] makes the workload active again and increments
// its cap epoch, so a later crossing pages again under a new dedup key. A
// resume while the total is over the cap is refused ([*OverCapError]);
// [Caps.ForceResume] does it on purpose, recorded, until the next
// reconciliation run, whose [Caps.Recheck] pauses it again with a page.
// [Caps.SetCap] below the total pauses at once, and admission refuses
// a total over the cap whatever the status says.
//
// # Workloads, entries and buckets
//
// Three things hold spend, and each has its own role:
//
//   - A workload is what a cap applies to: a running total, a cap, an
//     escalation step and a status, found by any of its references.
//     [Workloads] keeps the registry (workloads, references, the hold
//     policy, the fleet); [Caps] sets the cap and step, resumes, rechecks
//     a total and answers admission.
//   - An entry is one usage record's one effect on one workload's total,
//     keyed by the record's ID. [Ledger] applies records and reads the
//     entries and what a record can become instead (deferred,
//     disagreeing, quarantined).
//   - A bucket is what a provider of sums counts: one workload's usage of
//     one meter in one time window ([BucketKey]). Its head ([Bucket])
//     holds W, the sum of the entries that fall in it, and the values the
//     provider showed for it; the workload's total counts max(W, P*), P*
//     the highest of them, so an entry in a bucket adds only what the
//     provider has not already counted. [Buckets] observes the provider's
//     values, settles a bucket past its settle horizon (a gap is paged),
//     retires a bucket whose source or meter is no longer configured, and
//     records a provider's threshold alerts against the buckets' count.
//
// Around them, [Recon] keeps what reconciliation settles and records (the
// markers of webhook entries, deferred records past their deadline, its
// runs and schedule), [SumsPages] pages the reconciliation owner about a
// sums source's reads, and [Explainer] reads it all back for a page.
// [New] returns every role as one [Spend]; [NewReader] answers admission
// alone.
//
// The next reconciliation deadline of a workload and of a page is derived
// from the reconciler's published [RunSchedule]: a workload near or over
// its cap is looked at on the next run, any other at the first run at or
// after the deadline its last reconciliation set.
//
// # Tables and items
//
// The workloads table (WorkloadsTable in infra/template.yaml):
//
//	item       pk              sk                  gsi1pk           gsi1sk
//	workload   WL#<id>         WORKLOAD            WORKLOADS        <id>
//	alias      ALIAS#<ref>     ALIAS               ALIASES#<id>     <ref>
//	period     WL#<id>         PERIOD#<period ID>  -                -
//
// The workloads table's gsi1 projects KEYS_ONLY. All workloads share its
// one partition WORKLOADS, so it must not carry what usage changes: a
// total update or a cap decision writes no key attribute and therefore
// nothing to the index, and only creating a workload writes it.
//
// Every workload has an alias for its own ID, so resolving any reference is
// one GetItem on ALIAS#<ref>. The workload item holds the running total
// (attribute "total", always written through a #name placeholder since
// total is a reserved word), cap, escalation step, status, cap epoch, the
// highest escalation step paged in this epoch, the hold policy flag, the
// last accepted event and the next reconciliation deadline.
//
// A workload's billing period ([Periods], periods.go) is on its item;
// "total" counts the period "period_id" names, and a workload of the
// earlier build, without those fields, is a lifetime total whose item
// and writes are as they were. A record of an earlier period than the
// current one (late) adds to that period's item instead, in the same
// transaction as its entry, with a check that the workload's period is
// later; the first record or reconciliation run of a later period moves
// the workload to it once, and the period it leaves keeps its total on
// its item (period_roll.go). Period items never expire. A change of
// period ([Caps.SetPeriod], period_change.go) is pending on the item
// until the current period's end, where that boundary applies it.
//
// The ledger table (LedgerTable):
//
//	item          pk             sk                          gsi1pk               gsi1sk
//	entry         REC#<record>   ENTRY                       EVENT#<event>        REC#<record>
//	event ref     REC#<record>   EVENTREF                    EVENT#<event>        REF#<record>
//	deferred      REC#<record>   DEFERRED                    DEFERRED#open        <deadline>#<record>
//	disagreement  REC#<record>   DISAGREE#<workload>#<units> DISAGREE#<wl>        <observed>#<record>
//	decision      WL#<id>        DECISION#<epoch>#<step>     EVENT#<event>        DECISION#<epoch>#<step>
//	recon run     WL#<id>        RECON#<started>             -                    -
//	marker        REC#<record>   UNCONFIRMED                 UNCONFIRMED#<shard>  <seen>#<record>
//	quarantine    REC#<record>   QUARANTINE                  QUARANTINE           <quarantined>#<record>
//	run schedule  RECON#schedule RECON#schedule              -                    -
//	page          PAGE#<dedup>   PAGE                        OUTBOX#<status>      <time>#<dedup>   (package pager)
//
// The entry's and the decision's gsi1 keys are set only when the record
// came with an event ID. A resolved deferred item moves to gsi1pk
// DEFERRED#resolved, so the DEFERRED#open partition only holds open items;
// a marker moves to CONFIRMED#<shard> or UNSEEN#<shard> (recon.go).
// (Items move between index partitions by SET rather than REMOVE, which
// the embedded DynamoDB ignores.) keys.go spells every key of both tables.
//
// # Access patterns
//
//   - Resolve a reference: GetItem ALIAS#<ref> (workloads table).
//   - Apply a record: TransactWriteItems [Put REC#<record>/ENTRY if absent,
//     Update WL#<id> ADD total if it exists and is not retired, and on the
//     webhook path Put the record's marker, which reconciliation confirms
//     against the export or marks unseen (recon.go)].
//   - Apply a queue batch ([Ledger.ApplyBatch]): one BatchGetItem of the
//     records' aliases, then per workload (up to [MaxBatchRecords] records)
//     one TransactWriteItems [each record's entry if absent and marker,
//     Update WL#<id> ADD the records' summed units]; entries that exist are
//     taken out and the rest run again. Records counted in buckets of a
//     provider of sums: one BatchGetItem of their buckets' heads, then per
//     bucket (up to [MaxBucketRecords] records) one TransactWriteItems
//     [entries, the total, the head conditioned on its version, one
//     delta]. Then one BatchGetItem of the workloads the batch grew, and
//     one cap check each.
//   - List workloads: Query gsi1 WORKLOADS (keys), then BatchGetItem
//     WL#<id>/WORKLOAD (consistent), 100 keys a call.
//   - Classify a conflict: GetItem REC#<record>/ENTRY, only when the
//     transaction was cancelled on the entry.
//   - Check the cap: GetItem WL#<id> (consistent) after the transaction
//     (a batch's: see above).
//   - Pause or escalate: TransactWriteItems [Update WL#<id> conditioned on
//     status, cap epoch and cap; Put decision if absent; Put page if absent].
//   - Admission: GetItem WL#<id>.
//   - Explain a workload: GetItem WL#<id>; Query pk WL#<id> begins_with
//     DECISION# and RECON# (newest first); Query gsi1 DISAGREE#<id>; Query
//     gsi1 ALIASES#<id> (the references are its sort keys) and gsi1 DEFERRED#open for the pending deferred
//     amount.
//   - Explain an event: GetItem REC#<id>/ENTRY, else Query gsi1 EVENT#<id>,
//     else GetItem REC#<id>/QUARANTINE and REC#<id>/DEFERRED.
//   - Quarantine a refused record: TransactWriteItems [Put
//     REC#<record>/QUARANTINE if absent, Put the page for the
//     reconciliation owner]; so it is stored and paged once.
//
// Units are limited to [MaxUnits] per record and totals to [MaxTotal]
// (both 2^53, exact in every numeric representation on the way). The
// ledger transaction's condition keeps a total from passing MaxTotal; the
// record that would is refused with an [*OverflowError].
//   - Deferred records due: Query gsi1 DEFERRED#open with gsi1sk <= now.
//
// # Path contracts
//
// Each intake path states its contract in [Config]: the expected arrival
// time after the usage occurred, the maximum tolerated age, and its retry
// (webhook) or poll interval ([PathContract]). The escalation target of both
// is the reconciliation owner ([Config.ReconOwner], paged on
// [Config.ReconRoutingKey]): it owns deferred records (deadline = deferral time +
// the path's maximum age), disagreements, and the maximum age of a usage
// record that one path has and the other lacks.
package spend
