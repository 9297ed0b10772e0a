// Package reconcile is hookline's polling path: an EventBridge-scheduled
// run that reads the provider's authoritative usage export and folds it
// into the same ledger as the webhook path, through [spend.Ledger] (the
// transaction of [spend.Ledger.Apply]) with Path "poll"; [spend.Recon]
// keeps the markers, deferred records and runs it settles. Events are the
// fast path; polling proves or disproves them and finds what the fast path
// missed.
//
// # One run
//
// [Reconciler.Handle] (or [Reconciler.Run]) does, in order:
//
//  1. Reads the cursor and pages through the export window
//     [cursor - Overlap, now - Lag) by publication time
//     ([provider.Client.ListUsage]), folding each record. Stable record IDs
//     make the overlap harmless. Each record is classified: missed (applied
//     now; the webhook never came; its discovery latency is measured),
//     matched (the webhook path applied it with the same units and
//     workload), repeat (an earlier poll applied it), disagreement (spend
//     recorded and paged both values; nothing is overwritten) or deferred.
//     A record the poll applies trips the cap exactly as a webhook does.
//     A record the ledger refuses (negative units, missing fields, units
//     past [spend.MaxUnits], a total that would pass [spend.MaxTotal]) is
//     quarantined: stored with its reason and paged once to the
//     reconciliation owner ([spend.Ledger.Quarantine]); it never stops the
//     run or the cursor. Records fold with up to Concurrency in flight,
//     in lanes by workload reference: one workload's records fold in
//     export order, different workloads in parallel, and pages stream
//     through the lanes without being held whole.
//  2. Advances the cursor to the window's end with a conditional write:
//     the cursor must still hold the value this run read. A run that loses
//     this race records that and ends without error; its folding was
//     idempotent. A failed export page (a 5xx after retries) or fold
//     fails the run with an error, the cursor stays, and the next run
//     catches up.
//  3. Marks unseen the webhook entries the export still lacks although it
//     has been read up to Horizon past when hookline first saw them (not
//     when they happened: a source may send usage weeks old): a durable
//     mark and one page each ([spend.Recon.MarkUnseen]).
//  4. Classifies every workload into a risk tier ([Reconciler.Classify]):
//     near its cap (every run), active (ActiveInterval) or quiet
//     (QuietInterval). Every change of tier or interval is stored with its
//     reason and time ([Store.IntervalChanges]).
//  5. Attributes deferred records whose reference now maps to a workload
//     ([spend.Ledger.Reattribute]). Past their deadline, the unresolved ones of
//     a workload that holds get an explicit hold decision; the others get
//     one page per owner and run window, summary
//     "unresolved attribution amount=<units> oldest=<RFC3339> records=<n>".
//  6. Writes a reconciliation record ([spend.ReconRun]) for every workload
//     due in this run, with the window, cursor before and after, counts per
//     class, decisions and the next deadline, which becomes the workload's
//     next reconciliation deadline. Before the record, it checks the cap of
//     each due workload on its total alone ([spend.Caps.Recheck]), so a
//     workload resumed over its cap is paused again with a page whether or
//     not one of its records was in the window. Counts of workloads not due
//     are carried to their next record.
//
// Each run starts by publishing its schedule ([spend.RunSchedule]: the next
// run, the rate and the near-cap ratio), from which the spend path derives
// the next reconciliation deadline that workloads and pages name.
//
// Every run also leaves a run record ([Store.Runs]), whatever its outcome,
// and EMF metrics: discovery latency, counts per class, run duration,
// failures, lost races, and the amount and age of unresolved attribution.
//
// # Items
//
// The reconciler's own items live in the ledger table:
//
//	item             pk              sk
//	cursor           RECON#cursor    CURSOR
//	run record       RECON#run       RUN#<started>#<run id>
//	schedule         WL#<id>         SCHED
//	interval change  WL#<id>         SCHED#<at>#<run id>
//
// keys.go spells them; the workload partition is [spend.WorkloadPK].
package reconcile
