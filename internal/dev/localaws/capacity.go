package localaws

import (
	"sync"
	"time"
)

// DynamoDB's throughput limit on one partition (developer guide, "Best
// practices for designing and using partition keys effectively",
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html,
// and "Service, account, and table quotas"): a partition serves at most
// 3,000 read units or 1,000 write units a second, or a linear mix of the
// two, in on-demand and provisioned mode alike. The meter gives every
// partition key value of a table and of each global secondary index that
// budget of its own, which is AWS's best case: AWS also shares one
// physical partition among many key values.
const (
	partitionWriteUnits = 1000.0 // write units a second
	partitionReadUnits  = 3000.0 // read units a second
	// burstSeconds is how much unused capacity a partition keeps: a key
	// idle for a second or more may take up to a second's worth at once.
	burstSeconds = 1.0
)

// charge is what one operation takes from one partition key value of a
// table or of one of its indexes, in DynamoDB's capacity units.
type charge struct {
	table string
	index string // "" for the table itself
	key   string // the partition key value, canonical ("S:wl-01")
	read  float64
	write float64
	owner int // the request item it belongs to (a transaction's or a batch's)
}

// cost is the charge in write units: a read unit costs a third of one.
func (c charge) cost() float64 {
	return c.write + c.read*partitionWriteUnits/partitionReadUnits
}

// bucket is one partition key value's token bucket, in write units.
type bucket struct {
	level float64
	at    time.Time
}

// meter holds the partitions' buckets and counts what was consumed and
// throttled, per table and index.
type meter struct {
	mu        sync.Mutex
	now       func() time.Time
	buckets   map[string]*bucket
	lastSweep time.Time
	usage     map[string]*tableUsage // by table name
	// unlimited meters and counts but never throttles
	// ([Env.LiftThroughputLimits]).
	unlimited bool
	// held are partitions that lack capacity whatever their buckets
	// hold: until released when the count is negative
	// ([HoldPartitionAtLimit]), else for that many more requests
	// ([ThrottlePartitionRequests]).
	held map[string]int
}

func newMeter() *meter {
	return &meter{now: time.Now, buckets: map[string]*bucket{}, usage: map[string]*tableUsage{}}
}

// sweepAt is the number of buckets past which the meter forgets, at most
// once a second, the buckets that have refilled: a bucket that is full is
// the same as no bucket.
const sweepAt = 4096

// take debits every charge at once if every partition they name has the
// capacity, and counts the units. Otherwise it debits nothing, counts one
// throttle for each table and index that lacked capacity, and returns the
// positions of the charges that did not fit. A partition lacks capacity
// when it holds less than the charge (or, for a charge larger than the
// burst, less than a full bucket).
func (m *meter) take(cs []charge) (throttled []int) {
	if len(cs) == 0 {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	m.sweep(now)
	need := map[string]float64{}
	for _, c := range cs {
		need[bucketKey(c)] += c.cost()
	}
	short := map[string]bool{}
	for k, n := range need {
		if m.unlimited {
			m.refill(k, now)
			continue
		}
		if b := m.refill(k, now); b.level < min(n, partitionWriteUnits*burstSeconds) || m.spendHold(k) {
			short[k] = true
		}
	}
	if len(short) > 0 {
		counted := map[string]bool{}
		for i, c := range cs {
			if !short[bucketKey(c)] {
				continue
			}
			throttled = append(throttled, i)
			if r := c.table + "\x00" + c.index; !counted[r] {
				counted[r] = true
				m.units(c).count(c, true)
			}
		}
		return throttled
	}
	for k, n := range need {
		m.buckets[k].level -= n
	}
	for _, c := range cs {
		m.units(c).count(c, false)
	}
	return nil
}

// refund gives back charges that were taken for a write whose condition
// then failed (its index writes never happened).
func (m *meter) refund(cs []charge) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	for _, c := range cs {
		b := m.refill(bucketKey(c), now)
		b.level = min(b.level+c.cost(), partitionWriteUnits*burstSeconds)
		u := m.units(c)
		u.ReadUnits -= c.read
		u.WriteUnits -= c.write
	}
}

// refill returns a partition's bucket, topped up for the time since it
// was last used.
func (m *meter) refill(k string, now time.Time) *bucket {
	full := partitionWriteUnits * burstSeconds
	b, ok := m.buckets[k]
	if !ok {
		b = &bucket{level: full, at: now}
		m.buckets[k] = b
		return b
	}
	if d := now.Sub(b.at).Seconds(); d > 0 {
		b.level = min(full, b.level+d*partitionWriteUnits)
		b.at = now
	}
	return b
}

func (m *meter) sweep(now time.Time) {
	if len(m.buckets) < sweepAt || now.Sub(m.lastSweep) < time.Second {
		return
	}
	m.lastSweep = now
	for k, b := range m.buckets {
		if b.level+now.Sub(b.at).Seconds()*partitionWriteUnits >= partitionWriteUnits*burstSeconds {
			delete(m.buckets, k)
		}
	}
}

func bucketKey(c charge) string { return c.table + "\x00" + c.index + "\x00" + c.key }

// spendHold reports whether a partition is held, and counts one refused
// request against a hold for a number of requests. The caller holds m.mu.
func (m *meter) spendHold(k string) bool {
	n, ok := m.held[k]
	switch {
	case !ok:
		return false
	case n == 1:
		delete(m.held, k)
	case n > 1:
		m.held[k] = n - 1
	}
	return true
}

// hold makes a partition of a table, or of its index when index is not
// empty (its canonical key, "S:WL#w1"), lack capacity for the next
// requests requests that name it, or until the returned function is
// called when requests is negative.
func (m *meter) hold(table, index, key string, requests int) (release func()) {
	k := bucketKey(charge{table: table, index: index, key: key})
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.held == nil {
		m.held = map[string]int{}
	}
	m.held[k] = requests
	return func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		delete(m.held, k)
	}
}

// tableUsage is the live counters of one table and its indexes.
type tableUsage struct {
	table   Units
	indexes map[string]*Units
}

// units returns the counters a charge adds to. The caller holds m.mu.
func (m *meter) units(c charge) *Units {
	t := m.usage[c.table]
	if t == nil {
		t = &tableUsage{indexes: map[string]*Units{}}
		m.usage[c.table] = t
	}
	if c.index == "" {
		return &t.table
	}
	u := t.indexes[c.index]
	if u == nil {
		u = &Units{}
		t.indexes[c.index] = u
	}
	return u
}

// Capacity is what the embedded DynamoDB's tables and indexes consumed
// and how often they throttled since the [Env] started: a plain snapshot,
// by deployed table name. It is empty with the model off
// ([Options.NoModel]), which meters nothing.
type Capacity struct {
	Tables map[string]TableCapacity
}

// TableCapacity is one table's consumption, and its global secondary
// indexes' by index name (an index's writes are its own: a table write
// that changes what an item projects into an index also writes the index).
type TableCapacity struct {
	Units
	Indexes map[string]Units
}

// Units are capacity units consumed, in DynamoDB's units (a write unit is
// up to 1 KB written, a read unit up to 4 KB read strongly consistently,
// half that eventually consistently; a transaction's items count twice),
// and requests throttled.
type Units struct {
	ReadUnits      float64
	WriteUnits     float64
	ReadThrottles  int64 // requests refused for want of read capacity here
	WriteThrottles int64 // requests refused for want of write capacity here
}

// count adds a charge to the counters, or one throttle.
func (u *Units) count(c charge, throttled bool) {
	switch {
	case !throttled:
		u.ReadUnits += c.read
		u.WriteUnits += c.write
	case c.write > 0:
		u.WriteThrottles++
	default:
		u.ReadThrottles++
	}
}

// snapshot copies the counters.
func (m *meter) snapshot() Capacity {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := Capacity{Tables: make(map[string]TableCapacity, len(m.usage))}
	for name, t := range m.usage {
		c := TableCapacity{Units: t.table, Indexes: make(map[string]Units, len(t.indexes))}
		for idx, u := range t.indexes {
			c.Indexes[idx] = *u
		}
		out.Tables[name] = c
	}
	return out
}

// LiftThroughputLimits keeps metering and counting capacity but stops
// throttling, for a test that drives one partition key past what a
// DynamoDB partition serves (1,000 write units or 3,000 read units a
// second) on purpose, to exercise something else (transaction conflicts,
// read isolation). Production paths are tested with the limits on.
func (e *Env) LiftThroughputLimits() {
	if e.front != nil {
		e.front.meter.mu.Lock()
		e.front.meter.unlimited = true
		e.front.meter.mu.Unlock()
	}
}

// Capacity returns what the embedded DynamoDB consumed and throttled so
// far; it is empty against an external endpoint or with the model off.
func (e *Env) Capacity() Capacity {
	if e.front == nil || !e.front.model {
		return Capacity{Tables: map[string]TableCapacity{}}
	}
	return e.front.meter.snapshot()
}
