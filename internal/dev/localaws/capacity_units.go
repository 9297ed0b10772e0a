package localaws

import (
	"encoding/json"
	"maps"
	"math"
	"reflect"
	"slices"
)

// Capacity units by DynamoDB's rules (developer guide, "DynamoDB read and
// write operations",
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html,
// with item sizes from [itemSize]).
const (
	writeUnitBytes = 1024     // a write unit writes up to 1 KB
	readUnitBytes  = 4 * 1024 // a read unit reads up to 4 KB, strongly consistent
	transactional  = 2        // a transaction's item costs twice
)

// writeUnits is the write units of writing size bytes: 1 per KB, rounded
// up, at least 1 (a delete of an absent item costs 1).
func writeUnits(size int) float64 {
	return max(1, math.Ceil(float64(size)/writeUnitBytes))
}

// readUnits is the read units of reading size bytes at once: 1 per 4 KB,
// rounded up, at least 1 (reading nothing costs the minimum); an
// eventually consistent read costs half. A Query reads its items at once:
// their sizes are summed and rounded up once.
func readUnits(size int, consistent bool) float64 {
	u := max(1, math.Ceil(float64(size)/readUnitBytes))
	if !consistent {
		u /= 2
	}
	return u
}

// projection is what an index projects, as DescribeTable gives it.
type projection struct {
	ProjectionType   string
	NonKeyAttributes []string
}

// partitionOf is the canonical partition key value of an item under a key
// schema ("S:wl-01"), and whether the item has every key attribute of it
// (an item without them is not in the index).
func partitionOf(it item, keys []string) (string, bool) {
	if it == nil || len(keys) == 0 {
		return "", false
	}
	var pk string
	for i, k := range keys {
		typ, val, ok := scalar(it[k])
		if !ok {
			return "", false
		}
		if i == 0 {
			pk = typ + ":" + val
		}
	}
	return pk, true
}

// rawPartition is the canonical form of a partition key value in JSON.
func rawPartition(raw json.RawMessage) string {
	var v av
	if json.Unmarshal(raw, &v) != nil {
		return ""
	}
	typ, val, _ := scalar(&v)
	return typ + ":" + val
}

// projected is the index entry of an item: the table's and the index's
// key attributes, and what the index projects besides (KEYS_ONLY:
// nothing; INCLUDE: its listed attributes; ALL: every attribute).
func projected(it item, ti *tableInfo, idx []string, p projection) item {
	if p.ProjectionType == "ALL" {
		return it
	}
	out := item{}
	for _, names := range [][]string{ti.keys, idx, p.NonKeyAttributes} {
		for _, n := range names {
			if v, ok := it[n]; ok {
				out[n] = v
			}
		}
	}
	return out
}

// tableWrite is the charge of a write of the item under key, billed on the
// larger of the item before and after (UpdateItem, PutItem; a delete has
// no after), times mult (2 in a transaction).
func tableWrite(table string, ti *tableInfo, key, old, now item, mult float64) charge {
	pk, _ := partitionOf(key, ti.keys[:1])
	return charge{table: table, key: pk, write: mult * writeUnits(max(itemSize(old), itemSize(now)))}
}

// tableRead is the charge of reading one item of size bytes under key.
func tableRead(table string, ti *tableInfo, key item, size int, consistent bool, mult float64) charge {
	pk, _ := partitionOf(key, ti.keys[:1])
	return charge{table: table, key: pk, read: mult * readUnits(size, consistent)}
}

// indexWrites are the index writes of a table write that turns old into
// now (nil: absent), by the developer guide's "Global secondary indexes"
// write rules (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html#GSI.ThroughputConsiderations.Writes):
//
//   - an item that enters an index is a put of its entry there, and one
//     that leaves it a delete;
//   - an update that changes the index's key (partition or sort) is a
//     delete of the old entry and a put of the new, each on its own
//     partition;
//   - an update that changes a projected attribute is one write of the
//     larger entry; one that changes no projected attribute writes
//     nothing.
//
// Entries are billed by their size, 1 KB a unit, and never twice for a
// transaction (the propagation to an index is not itself transactional).
func indexWrites(table string, ti *tableInfo, old, now item) []charge {
	var out []charge
	for _, name := range slices.Sorted(maps.Keys(ti.indexes)) {
		idx, p := ti.indexes[name], ti.projections[name]
		oldPK, wasIn := partitionOf(old, idx)
		newPK, isIn := partitionOf(now, idx)
		var oldE, newE item
		if wasIn {
			oldE = projected(old, ti, idx, p)
		}
		if isIn {
			newE = projected(now, ti, idx, p)
		}
		at := func(pk string, e item) charge {
			return charge{table: table, index: name, key: pk, write: writeUnits(itemSize(e))}
		}
		switch {
		case wasIn && isIn && sameKey(old, now, idx):
			if !sameEntry(oldE, newE, p) {
				c := at(newPK, oldE)
				c.write = max(c.write, writeUnits(itemSize(newE)))
				out = append(out, c)
			}
		case wasIn && isIn:
			out = append(out, at(oldPK, oldE), at(newPK, newE))
		case wasIn:
			out = append(out, at(oldPK, oldE))
		case isIn:
			out = append(out, at(newPK, newE))
		}
	}
	return out
}

// sameKey reports whether two items have the same values of keys.
func sameKey(a, b item, keys []string) bool {
	for _, k := range keys {
		ta, va, _ := scalar(a[k])
		tb, vb, _ := scalar(b[k])
		if ta != tb || va != vb {
			return false
		}
	}
	return true
}

// sameEntry reports whether two index entries of the same key are equal.
// A KEYS_ONLY entry is its keys, so it is.
func sameEntry(a, b item, p projection) bool {
	if p.ProjectionType == "KEYS_ONLY" {
		return true
	}
	return reflect.DeepEqual(a, b)
}
