package spend

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/ddb"
)

// MaxBatchRecords is how many records of one workload one ledger
// transaction folds: two items each (entry and marker) and the workload's
// update stay within DynamoDB's 100 items a transaction.
const MaxBatchRecords = 40

// batchRetry is how a batch's transaction is retried while conflicts or
// throttling cancel it: jittered exponential backoff from 10 ms up to
// 500 ms, at most 10 attempts.
var batchRetry = ddb.Retry{Attempts: 10, Base: 10 * time.Millisecond, Max: 500 * time.Millisecond}

// ErrBatchContended means a batch's transaction was still cancelled by
// conflicts or throttling after every retry; its records are unapplied
// and may be applied again.
var ErrBatchContended = errors.New("spend: batch transaction still contended after retries")

// ApplyBatch folds the records of one queue batch into the ledger with the
// same outcomes as [Ledger.Apply] for each, but with one transaction per
// workload instead of one per record: the new records' entries (each
// conditioned on being absent, so a duplicate still counts once) and one
// ADD of their summed units to the workload's total. A hot workload's item
// is then written once per batch, not once per record.
//
// The results and errors are parallel to us. An error means that record's
// outcome is unknown and the caller should retry it; [IsRefused] errors
// are refusals, as from Apply.
func (s *Ledger) ApplyBatch(ctx context.Context, us []Usage) ([]Result, []error) {
	return s.ApplyBatchResolved(ctx, us, nil)
}

// ApplyBatchResolved is [Ledger.ApplyBatch] for records whose references
// the caller resolved already: ids maps each reference to its workload ID
// ("" or absent for none, as [Ledger.ApplyResolved] takes it). A nil ids
// resolves them.
func (s *Ledger) ApplyBatchResolved(ctx context.Context, us []Usage, ids map[string]string) ([]Result, []error) {
	b := &batch{s: s.core, us: us, res: make([]Result, len(us)), errs: make([]error, len(us)), resolved: ids}
	b.run(ctx)
	return b.res, b.errs
}

// batch is one ApplyBatch call: the records and their results.
type batch struct {
	s    *core
	us   []Usage
	res  []Result
	errs []error
	// resolved maps each reference to its workload ID; nil until plan
	// resolves them, unless the caller gave them.
	resolved map[string]string
	// first is the first record of the batch with each record ID.
	first map[string]int
	// buckets are the records counted in buckets of providers of sums,
	// by bucket, in batch order.
	buckets []*bucketGroup
	// checks are the workloads the groups' transactions grew, in commit
	// order, for the one cap check the batch makes of each.
	checks []*capCheck
	// dups are the records the groups found in the ledger already.
	dups []dup
}

// dup is a record of workload id that a group's transaction found in the
// ledger already.
type dup struct {
	i  int
	id string
}

// classifyLater keeps records recs of workload id, found in the ledger
// already, for classifyDuplicates.
func (b *batch) classifyLater(id string, recs []int) {
	for _, i := range recs {
		b.dups = append(b.dups, dup{i: i, id: id})
	}
}

// classifyDuplicates classifies the records the groups found in the
// ledger already, one by one as Apply classifies a duplicate, after the
// batch's cap checks: a repeat of a record in a batch that carried its
// workload over the cap then meets the workload paused, and the pause
// names the record that crossed, not the repeat.
func (b *batch) classifyDuplicates(ctx context.Context) {
	for _, d := range b.dups {
		b.res[d.i], b.errs[d.i] = b.s.conflict(ctx, b.us[d.i], d.id)
	}
}

func (b *batch) run(ctx context.Context) {
	groups, single := b.plan(ctx)
	for _, g := range groups {
		for start := 0; start < len(g.recs); start += MaxBatchRecords {
			b.applyGroup(ctx, g.id, g.recs[start:min(start+MaxBatchRecords, len(g.recs))])
		}
	}
	b.applyBuckets(ctx)
	b.checkCaps(ctx)
	b.classifyDuplicates(ctx)
	// Records outside the groups (no workload, or a record ID given twice
	// in the batch) take Apply's own path, after the groups, so that a
	// repeat meets the entry its first copy wrote.
	for _, i := range single {
		if b.errs[i] == nil {
			b.res[i], b.errs[i] = b.one(ctx, i)
		}
	}
}

// one applies record i alone. A repeat of a record whose first copy in
// this batch left its entry in the ledger is classified against that
// entry at once, without a transaction that could only be cancelled.
func (b *batch) one(ctx context.Context, i int) (Result, error) {
	id := b.workloadOf(i)
	if first, ok := b.first[b.us[i].RecordID]; ok && first != i && b.errs[first] == nil && id != "" {
		if o := b.res[first].Outcome; o == Applied || o == Duplicate || o == Disagreement {
			return b.s.conflict(ctx, b.us[i], id)
		}
	}
	return b.s.apply(ctx, b.us[i], id)
}

// group is the records of one workload, in batch order.
type group struct {
	id   string
	recs []int
}

// plan validates the records, resolves their references in one read, and
// groups them by workload. It returns the records that go one at a time.
func (b *batch) plan(ctx context.Context) ([]*group, []int) {
	var refs []string
	for i, u := range b.us {
		if err := u.validate(); err != nil {
			b.errs[i] = err
			continue
		}
		refs = append(refs, u.WorkloadRef)
	}
	if b.resolved == nil {
		ids, err := b.s.asWorkloads().ResolveRefs(ctx, refs)
		if err != nil {
			for i := range b.us {
				if b.errs[i] == nil {
					b.errs[i] = err
				}
			}
			return nil, nil
		}
		b.resolved = ids
	}
	ids := b.resolved
	var groups []*group
	byID := map[string]*group{}
	b.first = map[string]int{}
	var single []int
	byBucket := map[string]*bucketGroup{}
	for i, u := range b.us {
		if b.errs[i] != nil {
			continue
		}
		id := ids[u.WorkloadRef]
		_, seen := b.first[u.RecordID]
		if id == "" || seen {
			single = append(single, i)
			if !seen {
				b.first[u.RecordID] = i
			}
			continue
		}
		b.first[u.RecordID] = i
		if k, src, _, bucketed := b.s.sums.bucketFor(u, id); bucketed {
			if awaitsExport(u, src) {
				// Its marker joins its entry on Apply's path.
				single = append(single, i)
				continue
			}
			// A record counted in a bucket of a provider of sums folds
			// with the bucket's other records: its increase depends on
			// the bucket's head.
			bg := byBucket[k.String()]
			if bg == nil {
				bg = &bucketGroup{key: k, src: src, id: id}
				byBucket[k.String()] = bg
				b.buckets = append(b.buckets, bg)
			}
			bg.recs = append(bg.recs, i)
			continue
		}
		g := byID[id]
		if g == nil {
			g = &group{id: id}
			byID[id] = g
			groups = append(groups, g)
		}
		g.recs = append(g.recs, i)
	}
	return groups, single
}

// workloadOf is the workload record i's reference resolved to ("" for
// none).
func (b *batch) workloadOf(i int) string { return b.resolved[b.us[i].WorkloadRef] }

// applyGroup folds up to MaxBatchRecords records of workload id in one
// transaction. Entries that exist already (duplicates) are taken out and
// the transaction runs again without them; those records are then
// classified one by one, as Apply classifies a duplicate.
func (b *batch) applyGroup(ctx context.Context, id string, recs []int) {
	pending := slices.Clone(recs)
	var dups []int
	// The records taken out as duplicates are classified whatever becomes
	// of the rest: a duplicate left without a result would read as
	// applied to no workload.
	defer func() { b.classifyLater(id, dups) }()
	moved := false
	for len(pending) > 0 {
		tgs, err := b.targets(ctx, id, pending)
		if err != nil {
			b.fail(pending, err)
			return
		}
		tx, owners, err := b.groupTx(id, pending, tgs)
		if err != nil {
			b.fail(pending, err)
			return
		}
		err = b.s.transactBatch(ctx, tx)
		if err == nil {
			b.committed(id, pending, tgs)
			b.pageLate(ctx, id, pending, tgs)
			break
		}
		failed, _, ok := cancelled(err)
		if !ok || !slices.Contains(failed, true) {
			b.fail(pending, fmt.Errorf("spend: apply batch for %s: %w", id, err))
			return
		}
		if failed[len(failed)-1] {
			if !moved {
				// The workload may have moved to another period since
				// its period was cached: read it, and fold once more.
				moved = true
				if _, err := b.s.get(ctx, id); err == nil {
					continue
				}
			}
			// The workload is retired, vanished, or the sum would pass
			// MaxTotal: each record takes Apply's path, which tells which.
			for _, i := range pending {
				b.res[i], b.errs[i] = b.s.apply(ctx, b.us[i], id)
			}
			pending = nil
			break
		}
		var rest []int
		for pos, i := range owners {
			if i >= 0 && failed[pos] {
				dups = append(dups, i)
			}
		}
		for _, i := range pending {
			if !slices.Contains(dups, i) {
				rest = append(rest, i)
			}
		}
		if len(rest) == len(pending) {
			b.fail(pending, fmt.Errorf("spend: apply batch for %s: %w", id, err))
			return
		}
		pending = rest
	}
}

// targets is where each record of recs of workload id goes; a record of a
// later period moves the workload to it first.
func (b *batch) targets(ctx context.Context, id string, recs []int) ([]target, error) {
	tgs := make([]target, len(recs))
	for pos, i := range recs {
		var err error
		if tgs[pos], err = b.s.targetAt(ctx, id, b.s.countedAt(b.us[i])); err != nil {
			return nil, fmt.Errorf("spend: apply batch for %s: %w", id, err)
		}
	}
	// A later record may have moved the workload after an earlier one's
	// target was chosen: choose again from the period now cached, which
	// the transaction's condition checks.
	if cur := b.s.periods.get(id).current; cur != "" {
		for pos := range tgs {
			if tg := tgs[pos]; tg.period != cur && !tg.late {
				var err error
				if tgs[pos], err = b.s.targetAt(ctx, id, b.s.countedAt(b.us[recs[pos]])); err != nil {
					return nil, fmt.Errorf("spend: apply batch for %s: %w", id, err)
				}
			}
		}
	}
	return tgs, nil
}

// groupTx is the transaction of records recs for workload id: their entry
// items, the additions to the late periods among tgs (recs' targets),
// then the workload's item last: the update of its current total, or,
// when every record is late, a check that its period is later. owners[k]
// is the record of item k (-1 for the workload's items).
func (b *batch) groupTx(id string, recs []int, tgs []target) ([]types.TransactWriteItem, []int, error) {
	now := ddb.Stamp(b.s.now())
	var tx []types.TransactWriteItem
	var owners []int
	var sum int64
	var cur *target
	last := -1
	type lateSum struct {
		tg       target
		units, n int64
	}
	var late []*lateSum
	for pos, i := range recs {
		items, err := b.s.entryItems(b.us[i], id, now)
		if err != nil {
			return nil, nil, err
		}
		for range items {
			owners = append(owners, i)
		}
		tx = append(tx, items...)
		tg := tgs[pos]
		if !tg.late {
			sum += b.us[i].Units
			cur, last = &tgs[pos], i
			continue
		}
		k := slices.IndexFunc(late, func(l *lateSum) bool { return l.tg.period == tg.period })
		if k < 0 {
			late = append(late, &lateSum{tg: tg})
			k = len(late) - 1
		}
		late[k].units += b.us[i].Units
		late[k].n++
	}
	latest := ""
	for _, l := range late {
		add, err := b.s.periodAdd(id, l.tg, l.units, l.n, now)
		if err != nil {
			return nil, nil, err
		}
		tx, owners = append(tx, add), append(owners, -1)
		latest = max(latest, l.tg.period)
	}
	var wl types.TransactWriteItem
	var err error
	if cur != nil {
		wl, err = b.s.totalUpdate(id, *cur, sum, b.us[last], now)
	} else {
		wl, err = b.s.lateCheck(id, latest)
	}
	if err != nil {
		return nil, nil, err
	}
	return append(tx, wl), append(owners, -1), nil
}

// pageLate pages, once per workload and period, the late usage among
// recs that arrived after its period's close.
func (b *batch) pageLate(ctx context.Context, id string, recs []int, tgs []target) {
	for pos, i := range recs {
		if !tgs[pos].closed {
			continue
		}
		if err := b.s.pageLate(ctx, id, tgs[pos], b.us[i]); err != nil {
			b.errs[i] = fmt.Errorf("spend: applied %s: %w", b.us[i].RecordID, err)
		}
	}
}

// committed records the results of records recs, whose transaction
// committed, for the batch's cap check of the workload. A late record
// grew no current total.
func (b *batch) committed(id string, recs []int, tgs []target) {
	grown := make([]Usage, len(recs))
	for pos, i := range recs {
		grown[pos] = b.us[i]
		if tgs[pos].late {
			grown[pos].Units = 0
		}
	}
	b.committedAs(id, recs, grown)
}

// committedAs is committed for records that grew the total by grown[k].Units
// each (their own units, or a bucket's increase). The workload's cap is
// checked once all the batch's groups have committed.
func (b *batch) committedAs(id string, recs []int, grown []Usage) {
	ledgerAt := b.s.now()
	for _, i := range recs {
		u := b.us[i]
		dims := map[string]string{"Path": u.Path}
		b.s.metrics.Count(MetricAccepted, 1, dims)
		if !u.ObservedAt.IsZero() {
			b.s.metrics.Duration(MetricObservedToLedger, ledgerAt.Sub(u.ObservedAt), dims)
		}
		b.res[i] = Result{Outcome: Applied, WorkloadID: id}
	}
	for _, c := range b.checks {
		if c.id == id {
			c.recs, c.grown = append(c.recs, recs...), append(c.grown, grown...)
			return
		}
	}
	b.checks = append(b.checks, &capCheck{id: id, recs: slices.Clone(recs), grown: grown, ledgerAt: ledgerAt})
}

// capCheck is what a batch's transactions committed to one workload:
// the records, in commit order, and what each grew its total by.
type capCheck struct {
	id       string
	recs     []int
	grown    []Usage
	ledgerAt time.Time
}

// checkCaps reads every workload the batch's groups grew, with one
// BatchGetItem for up to 100 of them rather than one read each, and takes
// the cap action each calls for, once, in the name of the record that
// crossed.
func (b *batch) checkCaps(ctx context.Context) {
	if len(b.checks) == 0 {
		return
	}
	ids := make([]string, len(b.checks))
	for k, c := range b.checks {
		ids[k] = c.id
	}
	ws, err := b.s.workloadsByID(ctx, ids)
	for _, c := range b.checks {
		w, ok := ws[c.id]
		switch {
		case err != nil:
			b.fail(c.recs, fmt.Errorf("spend: applied batch for %s, cap check: %w", c.id, err))
		case !ok:
			b.fail(c.recs, fmt.Errorf("spend: applied batch for %s, cap check: workload %s: %w", c.id, c.id, ErrUnknownWorkload))
		default:
			b.capAction(ctx, w, c)
		}
	}
}

// capAction records w's total in c's results and takes the cap action w
// calls for.
func (b *batch) capAction(ctx context.Context, w Workload, c *capCheck) {
	for _, i := range c.recs {
		b.res[i].Total = w.Total
	}
	if action, _ := nextAction(w); action == "" {
		return
	}
	tip := c.recs[crossing(w, c.grown)]
	decisions, err := b.s.enforce(ctx, w, b.us[tip], c.ledgerAt)
	b.res[tip].Decisions = decisions
	if err != nil {
		b.errs[tip] = fmt.Errorf("spend: applied %s, enforce cap: %w", b.us[tip].RecordID, err)
	}
}

// crossing is the position in us of the record that carried w's total
// over the threshold of the action it calls for (the cap for a pause, the
// step's level for an escalation), counting from the total before this
// batch. When another batch crossed first, it is the first record.
func crossing(w Workload, us []Usage) int {
	var sum int64
	for _, u := range us {
		sum += u.Units
	}
	threshold := w.Cap
	if action, k := nextAction(w); action == ActionEscalate {
		threshold = w.Cap + k*w.Step
	}
	running := w.Total - sum
	for pos, u := range us {
		running += u.Units
		if running > threshold {
			return pos
		}
	}
	return 0
}

// fail sets err on every record of recs.
func (b *batch) fail(recs []int, err error) {
	for _, i := range recs {
		b.res[i], b.errs[i] = Result{}, err
	}
}

// transactBatch runs a batch's transaction, retrying, with jittered
// backoff, a cancellation caused only by a conflicting transaction or
// throttling. A cancellation with a failed condition is returned at once:
// the caller takes the failed records out and runs the rest.
func (s *core) transactBatch(ctx context.Context, items []types.TransactWriteItem) error {
	err := batchRetry.Transact(ctx, s.db, items)
	if errors.Is(err, ddb.ErrContended) {
		return fmt.Errorf("%w: %w", ErrBatchContended, err)
	}
	return err
}
