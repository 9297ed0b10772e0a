package localaws

import (
	"context"
	"encoding/json"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/truora/minidyn/server"
)

// The front keeps the items written most recently in minidyn and moves
// older ones out, as their JSON, until they are used again ("spilling").
//
// minidyn keeps an item as a map of attribute structs made of pointers:
// about 4 KB for an item of fifteen attributes, every word of which the
// garbage collector scans in each cycle. A run that writes a thousand
// items a second grows a heap of hundreds of megabytes, whose marking
// then takes most of a second and a quarter of the cores, each time: the
// latency of everything in the process follows the size of the tables.
// A spilled item is a byte slice, which the collector does not scan.
//
// Spilling is invisible to callers:
//   - An item is spilled only with its item lock held exclusively, so no
//     operation on it is under way.
//   - Every operation on an item warms it (puts it back in minidyn) under
//     its item lock before it reads or writes it.
//   - A Query or a Scan reads a table's items together: the first one on
//     a table warms all of its items and pins the table, whose items are
//     then never spilled again.

// DefaultHotItems is how many items the embedded DynamoDB keeps in its
// engine, across all tables, before it spills the least recently written.
const DefaultHotItems = 1024

// spillBatch is the most items spilled for each item written.
const spillBatch = 4

// itemRef names an item: its identity, its shard and its key.
type itemRef struct {
	id    itemID
	shard int
	key   item
}

// hotRef is a write of an item, in the order of writes.
type hotRef struct {
	itemRef
	seq uint64
}

// spilled is an item moved out of minidyn.
type spilled struct {
	shard int
	data  []byte // the item, as minidyn's JSON
}

// spill is the front's record of which items are in minidyn and which are
// spilled. Its lock is taken after item locks and before minidyn's.
type spill struct {
	mu     sync.Mutex
	limit  int // items kept in minidyn before the oldest spill; < 0: never
	seq    uint64
	hot    map[itemID]uint64 // the seq of an item's last write
	order  []hotRef          // writes, oldest first; stale once hot moves on
	owed   int               // spills the writes so far have paid for
	cold   map[itemID]spilled
	pinned map[string]bool // tables a Query or a Scan has read
}

func newSpill(limit int) spill {
	if limit == 0 {
		limit = DefaultHotItems
	}
	return spill{limit: limit, hot: map[itemID]uint64{}, cold: map[itemID]spilled{}, pinned: map[string]bool{}}
}

// tableOf is the logical table of an item identity.
func tableOf(id itemID) string {
	s := string(id)
	if i := strings.IndexByte(s, 0); i >= 0 {
		return s[:i]
	}
	return s
}

// warm puts a spilled item back into minidyn. The caller holds the item's
// lock, shared or exclusive.
func (d *dynamoFront) warm(r itemRef) error {
	s := &d.spill
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.cold[r.id]
	if !ok {
		return nil
	}
	if err := d.restore(r.id, c); err != nil {
		return err
	}
	delete(s.cold, r.id)
	s.touchLocked(r)
	return nil
}

// warmAll warms every item of refs.
func (d *dynamoFront) warmAll(refs []itemRef) error {
	for _, r := range refs {
		if err := d.warm(r); err != nil {
			return err
		}
	}
	return nil
}

// restore writes a spilled item back to its shard.
func (d *dynamoFront) restore(id itemID, c spilled) error {
	var it item
	if err := json.Unmarshal(c.data, &it); err != nil {
		return err
	}
	_, err := d.client(c.shard).PutItem(context.Background(), &server.PutItemInput{
		TableName: aws.String(physical(tableOf(id), c.shard)), Item: it})
	return err
}

// touch records a write of an item, which makes it the last to spill,
// and notes when it expires (expiry.go). The caller holds the items'
// locks exclusively.
func (d *dynamoFront) touch(refs ...itemRef) {
	s := &d.spill
	s.mu.Lock()
	for _, r := range refs {
		s.touchLocked(r)
	}
	s.mu.Unlock()
	d.noteExpiry(refs)
}

func (s *spill) touchLocked(r itemRef) {
	if s.limit < 0 || s.pinned[tableOf(r.id)] {
		return
	}
	s.seq++
	s.hot[r.id] = s.seq
	s.order = append(s.order, hotRef{r, s.seq})
	s.owed += spillBatch
	if len(s.order) > 2*len(s.hot)+s.limit {
		s.compact()
	}
}

// compact drops the writes that a later write of the same item stands
// for, so that the record of writes stays proportional to the items kept,
// however often the same few items are written.
func (s *spill) compact() {
	kept := s.order[:0]
	for _, r := range s.order {
		if s.hot[r.id] == r.seq {
			kept = append(kept, r)
		}
	}
	clear(s.order[len(kept):])
	s.order = kept
}

// trim spills the least recently written items while minidyn holds more
// than the limit, up to spillBatch for each item written since. It runs
// after a write, with no item lock held; an item whose lock is taken is
// left for a later write. So each write pays for a bounded share of the
// spilling, however large the tables grow.
func (d *dynamoFront) trim() {
	s := &d.spill
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.hot) <= s.limit {
		s.owed = 0
		return
	}
	for ; s.owed > 0 && len(s.hot) > s.limit && len(s.order) > 0; s.owed-- {
		r := s.order[0]
		s.order = s.order[1:]
		if s.hot[r.id] != r.seq {
			s.owed++ // written again since: a later entry stands for it
			continue
		}
		unlock, free := func() {}, false
		if !s.pinned[tableOf(r.id)] {
			unlock, free = d.locks.tryExclusive(r.id)
		}
		if !free {
			if !s.pinned[tableOf(r.id)] {
				s.order = append(s.order, r) // in use: try again later
			} else {
				delete(s.hot, r.id)
			}
			continue
		}
		if data, err := d.takeOut(r.itemRef); err == nil && data != nil {
			s.cold[r.id] = spilled{shard: r.shard, data: data}
		}
		unlock()
		delete(s.hot, r.id)
	}
}

// takeOut deletes an item from minidyn and returns its JSON; nil when it
// is absent. The caller holds the item's lock exclusively and the spill's
// lock.
func (d *dynamoFront) takeOut(r itemRef) ([]byte, error) {
	out, err := d.client(r.shard).DeleteItem(context.Background(), &server.DeleteItemInput{
		TableName: aws.String(physical(tableOf(r.id), r.shard)), Key: r.key, ReturnValues: ddbtypes.ReturnValueAllOld})
	if err != nil || len(out.Attributes) == 0 {
		return nil, err
	}
	return marshalKeepingEmpty(out.Attributes)
}

// pin warms every spilled item of a table and keeps its items in minidyn
// from then on, for a Query or a Scan, which read them together.
func (d *dynamoFront) pin(table string) error {
	s := &d.spill
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pinned[table] {
		return nil
	}
	for id, c := range s.cold {
		if tableOf(id) != table {
			continue
		}
		if err := d.restore(id, c); err != nil {
			return err
		}
		delete(s.cold, id)
	}
	s.pinned[table] = true
	return nil
}

// dropTable forgets a deleted table's spilled items.
func (d *dynamoFront) dropTable(table string) {
	s := &d.spill
	s.mu.Lock()
	defer s.mu.Unlock()
	for id := range s.cold {
		if tableOf(id) == table {
			delete(s.cold, id)
		}
	}
	delete(s.pinned, table)
}

// spilledCount is how many items are spilled now.
func (d *dynamoFront) spilledCount() int {
	d.spill.mu.Lock()
	defer d.spill.mu.Unlock()
	return len(d.spill.cold)
}
