package localaws

import (
	"container/heap"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/truora/minidyn/server"
)

// Time to Live. DynamoDB deletes an item some time after the number in
// its table's TTL attribute (epoch seconds) has passed: "typically within
// a few days", and until then the item "will still show up in reads,
// queries, and scans" (developer guide, "Time to Live (TTL)",
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/howitworks-ttl.html;
// API reference, UpdateTimeToLive). Within the hours a local run or a
// test lasts, that is never, so by default the front deletes nothing,
// and code that assumes an expired item has vanished fails here as it
// would on AWS.
//
// A long local run that writes hundreds of items a second (the live lab)
// then grows without bound. With [Options.ExpireItems] the front deletes
// an item within about a second of its expiry ([expiryEvery]), from the
// table and its indexes, whether it is in minidyn or spilled: each write
// to a table with TTL notes the item's expiry, and a sweep deletes the
// items whose noted expiry has passed and whose TTL attribute, read
// again under the item's lock, still says so. As on AWS, a deletion by
// TTL consumes no capacity.

// ExpiryEnv names the variable that `hookline run` reads [Options.ExpireItems]
// from: "prompt" deletes expired items, "lazy" (or unset) keeps them.
const ExpiryEnv = "HOOKLINE_LOCAL_AWS_TTL"

// ExpiryFromEnv reads [ExpiryEnv]: true for "prompt", false for "lazy" or
// unset.
func ExpiryFromEnv() (bool, error) {
	switch v := os.Getenv(ExpiryEnv); v {
	case "", "lazy":
		return false, nil
	case "prompt":
		return true, nil
	default:
		return false, fmt.Errorf("localaws: %s=%q is not lazy or prompt", ExpiryEnv, v)
	}
}

// expiryEvery is how often the front deletes expired items with
// ExpireItems on.
const expiryEvery = time.Second

// expiry is the front's record of when items of tables with TTL expire.
type expiry struct {
	on  bool
	now func() time.Time

	mu     sync.Mutex
	due    dueHeap
	latest map[itemID]int64 // each item's TTL, as last noted (epoch seconds)

	deleted atomic.Int64
}

// due is an item that expires at at; stale once the item's latest TTL is
// another.
type due struct {
	at int64
	id itemID
}

type dueHeap []due

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h dueHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)        { *h = append(*h, x.(due)) }
func (h *dueHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// ttlAttr is the TTL attribute of a table, or "" when TTL is off for it.
func (d *dynamoFront) ttlAttr(table string) string {
	d.meta.mu.Lock()
	defer d.meta.mu.Unlock()
	return d.meta.ttl[table]
}

// ttlOf reads a TTL attribute: epoch seconds, or false for an attribute
// that is missing or not a number, which never expires.
func ttlOf(v *av) (int64, bool) {
	if v == nil || v.N == nil {
		return 0, false
	}
	f, err := strconv.ParseFloat(*v.N, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return int64(math.Floor(f)), true
}

// expired reports whether an item's TTL has passed at now: its epoch
// seconds are less than now.
func expired(it item, attr string, now time.Time) bool {
	at, ok := ttlOf(it[attr])
	return ok && at < now.Unix()
}

// noteExpiry records when the items just written expire. The caller holds
// each item's lock exclusively, and the items are in minidyn.
func (d *dynamoFront) noteExpiry(refs []itemRef) {
	e := &d.expiry
	if !e.on {
		return
	}
	for _, r := range refs {
		table := tableOf(r.id)
		attr := d.ttlAttr(table)
		if attr == "" {
			continue
		}
		it, err := d.engines[r.shard].get(physical(table, r.shard), r.key)
		if err != nil {
			continue
		}
		at, ok := ttlOf(it[attr])
		e.mu.Lock()
		switch old, noted := e.latest[r.id]; {
		case !ok:
			delete(e.latest, r.id)
		case !noted || old != at:
			e.latest[r.id] = at
			heap.Push(&e.due, due{at, r.id})
		}
		e.mu.Unlock()
	}
}

// expireNow deletes every item whose TTL has passed and returns how many
// it deleted. An item in use is left for the next sweep.
func (d *dynamoFront) expireNow() int {
	e := &d.expiry
	if !e.on {
		return 0
	}
	now := e.now()
	var busy []due
	n := 0
	for {
		e.mu.Lock()
		if len(e.due) == 0 || e.due[0].at >= now.Unix() {
			e.mu.Unlock()
			break
		}
		x := heap.Pop(&e.due).(due)
		if at, ok := e.latest[x.id]; !ok || at != x.at {
			e.mu.Unlock()
			continue // written since with another TTL, or none
		}
		delete(e.latest, x.id)
		e.mu.Unlock()
		switch d.expireItem(x.id, now) {
		case expireBusy:
			busy = append(busy, x)
		case expireDeleted:
			n++
		}
	}
	e.mu.Lock()
	for _, x := range busy {
		if _, noted := e.latest[x.id]; !noted {
			e.latest[x.id] = x.at
			heap.Push(&e.due, x)
		}
	}
	e.mu.Unlock()
	e.deleted.Add(int64(n))
	return n
}

type expireResult int

const (
	expireKept expireResult = iota
	expireDeleted
	expireBusy
)

// expireItem deletes the item id if its TTL has passed at now, with its
// lock held exclusively: from the spilled items, or from minidyn (and so
// from its indexes).
func (d *dynamoFront) expireItem(id itemID, now time.Time) expireResult {
	ref, ok := d.refOf(id)
	if !ok {
		return expireKept
	}
	release, free := d.locks.tryExclusive(id)
	if !free {
		return expireBusy
	}
	defer release()
	table := tableOf(id)
	attr := d.ttlAttr(table)
	if attr == "" {
		return expireKept
	}
	// With the item's lock held, nothing spills or warms it but a table's
	// first Query or Scan (pin), which only warms: the spill's lock is
	// needed only to look at the spilled items and the record of writes.
	s := &d.spill
	s.mu.Lock()
	if c, cold := s.cold[id]; cold {
		defer s.mu.Unlock()
		var it item
		if json.Unmarshal(c.data, &it) != nil || !expired(it, attr, now) {
			return expireKept
		}
		delete(s.cold, id)
		return expireDeleted
	}
	s.mu.Unlock()
	phys := physical(table, ref.shard)
	it, err := d.engines[ref.shard].get(phys, ref.key)
	if err != nil || it == nil || !expired(it, attr, now) {
		return expireKept
	}
	if _, err := d.client(ref.shard).DeleteItem(context.Background(), &server.DeleteItemInput{TableName: aws.String(phys), Key: ref.key}); err != nil {
		return expireKept
	}
	s.mu.Lock()
	delete(s.hot, id) // its entries in the order of writes are stale now
	s.mu.Unlock()
	return expireDeleted
}

// refOf rebuilds an item's reference from its identity (see locate): the
// table's key names in order, each value as "T:text", the last one all
// that remains. An identity that does not locate to itself again is not
// rebuilt, and its item never expires here.
func (d *dynamoFront) refOf(id itemID) (itemRef, bool) {
	table := tableOf(id)
	names, err := d.keyNames(table)
	if err != nil {
		return itemRef{}, false
	}
	parts := strings.SplitN(strings.TrimPrefix(string(id), table+"\x00"), "\x00", len(names))
	if len(parts) != len(names) {
		return itemRef{}, false
	}
	key := make(item, len(names))
	for i, p := range parts {
		typ, val, ok := strings.Cut(p, ":")
		if !ok {
			return itemRef{}, false
		}
		switch typ {
		case "S":
			key[names[i]] = &av{S: aws.String(val)}
		case "N":
			key[names[i]] = &av{N: aws.String(val)}
		case "B":
			b, err := base64.StdEncoding.DecodeString(val)
			if err != nil {
				return itemRef{}, false
			}
			key[names[i]] = &av{B: b}
		default:
			return itemRef{}, false
		}
	}
	again, shard, key, err := d.locate(table, key)
	if err != nil || again != id {
		return itemRef{}, false
	}
	return itemRef{id, shard, key}, true
}

// sweepExpired deletes expired items every expiryEvery until stop is
// closed.
func (d *dynamoFront) sweepExpired(stop <-chan struct{}) {
	t := time.NewTicker(expiryEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			d.expireNow()
		}
	}
}

// ExpireItemsNow deletes, at once, every item of the embedded DynamoDB
// whose TTL has passed, as the sweep that runs each second with
// [Options.ExpireItems] does, and returns how many it deleted. Without
// ExpireItems (or with an external endpoint) it deletes nothing.
func (e *Env) ExpireItemsNow() int {
	if e.front == nil {
		return 0
	}
	return e.front.expireNow()
}

// ItemsExpired is how many items the embedded DynamoDB deleted because
// their TTL passed.
func (e *Env) ItemsExpired() int64 {
	if e.front == nil {
		return 0
	}
	return e.front.expiry.deleted.Load()
}
