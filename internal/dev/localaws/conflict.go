package localaws

import (
	"net/http"
	"slices"
	"sync"
)

// lockMode is how an operation holds its items, and what it does when one
// is held already. With the model on, it follows DynamoDB's transaction
// conflict handling (developer guide, "Transaction conflict handling in
// DynamoDB"):
//
//   - a TransactWriteItems that meets an item held by a running
//     TransactWriteItems is cancelled (TransactionConflict);
//   - a PutItem, UpdateItem or DeleteItem of an item held by a running
//     TransactWriteItems fails (TransactionConflictException);
//   - a TransactGetItems that meets an item held by any running write is
//     cancelled (TransactionConflict).
//
// Every other meeting waits, as it did before the model: the holders are
// single operations on the front, which finish in microseconds.
type lockMode int

const (
	readWait    lockMode = iota // GetItem, BatchGetItem: shared, waits
	writeWait                   // BatchWriteItem, and every write with the model off: exclusive, waits
	writeSingle                 // PutItem, UpdateItem, DeleteItem: exclusive, fails against a transaction's write
	txWrite                     // TransactWriteItems: exclusive, cancelled by a transaction's write
	txRead                      // TransactGetItems: shared, cancelled by any write
)

// exclusive reports whether the mode writes.
func (m lockMode) exclusive() bool { return m == writeWait || m == writeSingle || m == txWrite }

// hold is who holds one item.
type hold struct {
	readers, txReaders int  // shared holders, and how many are transactions
	writer, txWriter   bool // an exclusive holder, and whether it is a transaction
}

// meet says what an operation in mode m does on an item held as h: take
// it now, wait, or give up with a conflict.
func (h *hold) meet(m lockMode) (free, conflict bool) {
	switch m {
	case writeSingle, txWrite:
		if h.txWriter {
			return false, true
		}
	case txRead:
		if h.writer {
			return false, true
		}
	}
	if m.exclusive() {
		return !h.writer && h.readers == 0, false
	}
	return !h.writer, false
}

func (h *hold) take(m lockMode) {
	switch {
	case m.exclusive():
		h.writer, h.txWriter = true, m == txWrite
	default:
		h.readers++
		if m == txRead {
			h.txReaders++
		}
	}
}

func (h *hold) drop(m lockMode) {
	switch {
	case m.exclusive():
		h.writer, h.txWriter = false, false
	default:
		h.readers--
		if m == txRead {
			h.txReaders--
		}
	}
}

func (h *hold) idle() bool { return !h.writer && h.readers == 0 }

// lockStripe guards the holds of the items that hash to it.
type lockStripe struct {
	mu    sync.Mutex
	freed sync.Cond // broadcast when a hold of the stripe is dropped
	held  map[itemID]*hold
}

// itemLocks is the front's item lock table: a hold per item in use, kept
// in lockStripes stripes. Two items of one stripe never conflict with
// each other; a stripe is only the unit of its mutex. Operations take
// their stripes in stripe order and every item of a stripe at once, so
// operations that wait never deadlock, and operations that cannot wait
// (transactions) give back what they took.
type itemLocks struct {
	stripes [lockStripes]lockStripe
}

func newItemLocks() *itemLocks {
	l := &itemLocks{}
	for i := range l.stripes {
		s := &l.stripes[i]
		s.freed.L = &s.mu
		s.held = map[itemID]*hold{}
	}
	return l
}

// stripeGroup is the items of one stripe that one operation takes.
type stripeGroup struct {
	stripe int
	ids    []itemID
}

// groups sorts ids into their stripes, in stripe order.
func groups(ids []itemID) []stripeGroup {
	by := map[int][]itemID{}
	for _, id := range ids {
		s := stripeOf(id)
		if !slices.Contains(by[s], id) {
			by[s] = append(by[s], id)
		}
	}
	out := make([]stripeGroup, 0, len(by))
	for s, g := range by {
		out = append(out, stripeGroup{s, g})
	}
	slices.SortFunc(out, func(a, b stripeGroup) int { return a.stripe - b.stripe })
	return out
}

// acquire takes every item of ids in mode m, waiting where m waits. It
// returns the function that releases them, or, when an item conflicts,
// nothing held and the set of the items that conflict.
func (l *itemLocks) acquire(ids []itemID, m lockMode) (release func(), conflicts map[itemID]bool) {
	gs := groups(ids)
	for i, g := range gs {
		if c := l.takeGroup(g, m); c != nil {
			l.release(gs[:i], m)
			for _, rest := range gs[i+1:] {
				l.peek(rest, m, c)
			}
			return nil, c
		}
	}
	return func() { l.release(gs, m) }, nil
}

// takeGroup takes a stripe's items at once, waiting until all are free,
// or takes none and returns those that conflict.
func (l *itemLocks) takeGroup(g stripeGroup, m lockMode) map[itemID]bool {
	s := &l.stripes[g.stripe]
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		var conflicts map[itemID]bool
		free := true
		for _, id := range g.ids {
			h := s.held[id]
			if h == nil {
				continue
			}
			ok, c := h.meet(m)
			if c {
				if conflicts == nil {
					conflicts = map[itemID]bool{}
				}
				conflicts[id] = true
			}
			free = free && ok
		}
		if conflicts != nil {
			return conflicts
		}
		if free {
			for _, id := range g.ids {
				h := s.held[id]
				if h == nil {
					h = &hold{}
					s.held[id] = h
				}
				h.take(m)
			}
			return nil
		}
		s.freed.Wait()
	}
}

// peek adds to conflicts the items of g that conflict with m now, taking
// nothing, so that a cancellation names every conflicting item it can.
func (l *itemLocks) peek(g stripeGroup, m lockMode, conflicts map[itemID]bool) {
	s := &l.stripes[g.stripe]
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range g.ids {
		if h := s.held[id]; h != nil {
			if _, c := h.meet(m); c {
				conflicts[id] = true
			}
		}
	}
}

func (l *itemLocks) release(gs []stripeGroup, m lockMode) {
	for _, g := range gs {
		s := &l.stripes[g.stripe]
		s.mu.Lock()
		for _, id := range g.ids {
			h := s.held[id]
			h.drop(m)
			if h.idle() {
				delete(s.held, id)
			}
		}
		s.freed.Broadcast()
		s.mu.Unlock()
	}
}

// tryExclusive takes one item exclusively if no one holds it, without
// waiting, for the spill (spill.go).
func (l *itemLocks) tryExclusive(id itemID) (release func(), ok bool) {
	g := stripeGroup{stripeOf(id), []itemID{id}}
	s := &l.stripes[g.stripe]
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held[id] != nil {
		return nil, false
	}
	h := &hold{}
	h.take(writeWait)
	s.held[id] = h
	return func() { l.release([]stripeGroup{g}, writeWait) }, true
}

// mode is the mode of an operation with the model on or off: with it off,
// every operation waits.
func (d *dynamoFront) mode(m lockMode) lockMode {
	if d.model {
		return m
	}
	if m.exclusive() {
		return writeWait
	}
	return readWait
}

// lockItem takes one item for a single-item operation. A conflict with a
// running transaction is answered as DynamoDB answers it.
func (d *dynamoFront) lockItem(id itemID, m lockMode) (release func(), status int, body []byte) {
	release, conflicts := d.locks.acquire([]itemID{id}, d.mode(m))
	if conflicts != nil {
		d.singleConflicts.Add(1)
		status, body = apiError(http.StatusBadRequest, "TransactionConflictException",
			"Transaction is ongoing for the item")
		return nil, status, body
	}
	return release, 0, nil
}

// lock takes the items of ids, waiting for each, and returns the function
// that releases them: for BatchWriteItem and BatchGetItem, which never
// conflict.
func (d *dynamoFront) lock(ids []itemID, exclusive bool) func() {
	m := readWait
	if exclusive {
		m = writeWait
	}
	release, _ := d.locks.acquire(ids, m)
	return release
}
