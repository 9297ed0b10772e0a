package localaws

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"math/big"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/truora/minidyn/server"
)

// Each table is kept as shards: minidyn tables of the same schema, one per
// hash of the partition key value. minidyn keeps every table's keys in a
// slice it sorts again on each new key, so inserting costs time in
// proportion to the table's size; shards divide that size by
// tableShards. An item, and so every item of one partition, lives in one
// shard; a query on the table's own key reads one shard; a scan reads
// every shard in turn behind an opaque LastEvaluatedKey, and a query on a
// global secondary index reads its partition from every shard and merges
// it in index order (index_query.go).
const tableShards = 64

const cursorAttr = "hookline_cursor"

func physical(table string, shard int) string { return fmt.Sprintf("%s.s%02d", table, shard) }

// tableInfo is a table's key schema and its indexes' key schemas.
type tableInfo struct {
	keys        []string // hash, range
	types       map[string]string
	indexes     map[string][]string   // index name -> hash, range
	projections map[string]projection // index name -> what it projects
}

// info describes a table once, from its first shard.
func (d *dynamoFront) info(table string) (*tableInfo, error) {
	d.keyMu.RLock()
	ti, ok := d.infos[table]
	d.keyMu.RUnlock()
	if ok {
		return ti, nil
	}
	status, body := d.call(0, "DescribeTable", map[string]string{"TableName": physical(table, 0)})
	if status != http.StatusOK {
		return nil, errNoTable
	}
	var out struct {
		Table struct {
			KeySchema              []struct{ AttributeName, KeyType string }
			AttributeDefinitions   []struct{ AttributeName, AttributeType string }
			GlobalSecondaryIndexes []struct {
				IndexName  string
				KeySchema  []struct{ AttributeName, KeyType string }
				Projection projection
			}
		}
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, err
	}
	order := func(ks []struct{ AttributeName, KeyType string }) []string {
		var names []string
		for _, k := range ks {
			if k.KeyType == "HASH" {
				names = append([]string{k.AttributeName}, names...)
			} else {
				names = append(names, k.AttributeName)
			}
		}
		return names
	}
	ti = &tableInfo{keys: order(out.Table.KeySchema), types: map[string]string{}, indexes: map[string][]string{},
		projections: map[string]projection{}}
	for _, a := range out.Table.AttributeDefinitions {
		ti.types[a.AttributeName] = a.AttributeType
	}
	for _, g := range out.Table.GlobalSecondaryIndexes {
		ti.indexes[g.IndexName] = order(g.KeySchema)
		ti.projections[g.IndexName] = g.Projection
	}
	if len(ti.keys) == 0 {
		return nil, errNoTable
	}
	d.keyMu.Lock()
	d.infos[table] = ti
	d.keyMu.Unlock()
	return ti, nil
}

// shardOf returns the shard of a partition key value in JSON.
func shardOf(raw json.RawMessage) int {
	var v av
	json.Unmarshal(raw, &v)
	return shardOfValue(&v)
}

// shardOfValue returns the shard of a partition key value.
func shardOfValue(v *av) int {
	typ, val, _ := scalar(v)
	h := fnv.New32a()
	h.Write([]byte(typ + ":" + val))
	return int(h.Sum32() % tableShards)
}

// withTable returns body with TableName (and any extra fields) replaced.
func withFields(body []byte, fields map[string]any) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, err
	}
	for k, v := range fields {
		if v == nil {
			delete(m, k)
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		m[k] = b
	}
	return json.Marshal(m)
}

// withTable returns body with its TableName set to phys. The SDK writes
// compact JSON, so the name is replaced in place when it appears once;
// anything else is rewritten through a full decode.
func withTable(body []byte, logical, phys string) ([]byte, error) {
	quoted, _ := json.Marshal(logical)
	field := append([]byte(`"TableName":`), quoted...)
	if bytes.Count(body, field) == 1 {
		pq, _ := json.Marshal(phys)
		return bytes.Replace(body, field, append([]byte(`"TableName":`), pq...), 1), nil
	}
	return withFields(body, map[string]any{"TableName": phys})
}

// renameResponse replaces a physical table name by the logical one in a
// response (TableName, TableArn).
func renameResponse(out []byte, phys, logical string) []byte {
	return bytes.ReplaceAll(out, []byte(`"`+phys+`"`), []byte(`"`+logical+`"`))
}

// createTable creates every shard of a table.
func (d *dynamoFront) createTable(name string, body []byte) (int, []byte) {
	var status int
	var first []byte
	for s := range tableShards {
		b, err := withFields(body, map[string]any{"TableName": physical(name, s)})
		if err != nil {
			return apiError(http.StatusBadRequest, "SerializationException", err.Error())
		}
		st, out := d.callRaw(s, "CreateTable", b)
		if st != http.StatusOK {
			return st, out
		}
		if s == 0 {
			status, first = st, renameResponse(out, physical(name, 0), name)
		}
	}
	return status, first
}

// allShards runs one request on every shard of a table and answers with
// the first shard's response (DeleteTable, UpdateTable).
func (d *dynamoFront) allShards(op, name string, body []byte) (int, []byte) {
	var status int
	var first []byte
	for s := range tableShards {
		b, err := withFields(body, map[string]any{"TableName": physical(name, s)})
		if err != nil {
			return apiError(http.StatusBadRequest, "SerializationException", err.Error())
		}
		st, out := d.callRaw(s, op, b)
		if st != http.StatusOK {
			return st, renameResponse(out, physical(name, s), name)
		}
		if s == 0 {
			status, first = st, renameResponse(out, physical(name, 0), name)
		}
	}
	return status, first
}

// scanState is the cursor of a sharded scan.
type scanState struct {
	Shard int
	ESK   map[string]json.RawMessage `json:",omitempty"`
}

func encodeCursor(v any) map[string]any {
	b, _ := json.Marshal(v)
	return map[string]any{cursorAttr: map[string]string{"S": base64.RawURLEncoding.EncodeToString(b)}}
}

func decodeCursor(esk map[string]json.RawMessage, v any) bool {
	raw, ok := esk[cursorAttr]
	if !ok {
		return false
	}
	var s map[string]string
	if json.Unmarshal(raw, &s) != nil {
		return false
	}
	b, err := base64.RawURLEncoding.DecodeString(s["S"])
	return err == nil && json.Unmarshal(b, v) == nil
}

// pageResult is the part of a Query or Scan response the merge reads.
type pageResult struct {
	Items            []map[string]json.RawMessage
	Count            int
	ScannedCount     int
	LastEvaluatedKey map[string]json.RawMessage
}

// scanShards runs a Scan over the shards in order, from the cursor, until
// it has Limit items (or, without a Limit, to the end).
func (d *dynamoFront) scanShards(table string, body []byte, countOnly bool) (int, []byte) {
	var in struct {
		Limit                  int
		ExclusiveStartKey      map[string]json.RawMessage
		ConsistentRead         bool
		ReturnConsumedCapacity string
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return apiError(http.StatusBadRequest, "SerializationException", err.Error())
	}
	if err := d.pin(table); err != nil {
		return internalError(err)
	}
	st := scanState{}
	if in.ExclusiveStartKey != nil && !decodeCursor(in.ExclusiveStartKey, &st) {
		return apiError(http.StatusBadRequest, "ValidationException", "The provided starting key is invalid")
	}
	var res pageResult
	for st.Shard < tableShards {
		fields := map[string]any{"TableName": physical(table, st.Shard), "Select": nil, "ExclusiveStartKey": nil}
		if st.ESK != nil {
			fields["ExclusiveStartKey"] = st.ESK
		}
		if in.Limit > 0 {
			fields["Limit"] = in.Limit - res.ScannedCount
		}
		b, err := withFields(body, fields)
		if err != nil {
			return apiError(http.StatusBadRequest, "SerializationException", err.Error())
		}
		status, out := d.callRaw(st.Shard, "Scan", b)
		if status != http.StatusOK {
			return status, renameResponse(out, physical(table, st.Shard), table)
		}
		var p pageResult
		if err := json.Unmarshal(out, &p); err != nil {
			return internalError(err)
		}
		res.Items = append(res.Items, p.Items...)
		res.ScannedCount += max(p.ScannedCount, len(p.Items))
		if p.LastEvaluatedKey != nil {
			st.ESK = p.LastEvaluatedKey
		} else {
			st = scanState{Shard: st.Shard + 1}
		}
		if in.Limit > 0 && res.ScannedCount >= in.Limit {
			break
		}
	}
	resp := map[string]any{"Count": len(res.Items), "ScannedCount": res.ScannedCount}
	if !countOnly {
		resp["Items"] = res.Items
		if res.Items == nil {
			resp["Items"] = []any{}
		}
	}
	if st.Shard < tableShards {
		resp["LastEvaluatedKey"] = encodeCursor(st)
	}
	status, out := jsonOK(resp)
	if status != http.StatusOK || !d.model {
		return status, out
	}
	cs, err := d.scanCharge(table, res.Items, in.ConsistentRead)
	if err != nil {
		return internalError(err)
	}
	if which := d.meterTake(cs); which != nil {
		return throttleError(cs, which)
	}
	return withConsumed(status, out, cs, in.ReturnConsumedCapacity, false)
}

// scanCharge is the charge of a Scan page that read items: their sizes
// summed and rounded up to 4 KB once, as a Query's (developer guide,
// "DynamoDB read and write operations", Scan), spread over the partitions
// they came from in proportion to their sizes. A page that read nothing
// costs the minimum on the table. The engine filters before the front
// sees the page, so a Scan with a FilterExpression is charged for what it
// returned, not for what it read: less than DynamoDB charges.
func (d *dynamoFront) scanCharge(table string, items []map[string]json.RawMessage, consistent bool) ([]charge, error) {
	ti, err := d.info(table)
	if err != nil {
		return nil, err
	}
	sizes, total := map[string]int{}, 0
	for _, raw := range items {
		b, err := json.Marshal(raw)
		if err != nil {
			return nil, err
		}
		var it item
		if err := json.Unmarshal(b, &it); err != nil {
			return nil, err
		}
		size := itemSize(it)
		sizes[rawPartition(raw[ti.keys[0]])] += size
		total += size
	}
	units := readUnits(total, consistent)
	if total == 0 {
		return []charge{{table: table, read: units}}, nil
	}
	cs := make([]charge, 0, len(sizes))
	for _, pk := range slices.Sorted(maps.Keys(sizes)) {
		cs = append(cs, charge{table: table, key: pk, read: units * float64(sizes[pk]) / float64(total)})
	}
	return cs, nil
}

// keyEq finds "<name> = <value>" in a key condition; the name may be a
// #placeholder.
var keyEq = regexp.MustCompile(`(#?[A-Za-z0-9_]+)\s*=\s*(:[A-Za-z0-9_]+)`)

// query runs a Query: on the table's key, on the one shard that holds the
// partition; on an index, on every shard, merged in index order.
func (d *dynamoFront) query(body []byte) (int, []byte) {
	var in struct {
		TableName                 string
		IndexName                 string
		KeyConditionExpression    string
		ExpressionAttributeNames  map[string]string
		ExpressionAttributeValues map[string]json.RawMessage
		KeyConditions             map[string]struct{ AttributeValueList []json.RawMessage }
		Limit                     int
		ScanIndexForward          *bool
		Select                    string
		ExclusiveStartKey         map[string]json.RawMessage
		ConsistentRead            bool
		ReturnConsumedCapacity    string
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return apiError(http.StatusBadRequest, "SerializationException", err.Error())
	}
	ti, err := d.info(in.TableName)
	if err != nil {
		return apiError(http.StatusBadRequest, "ResourceNotFoundException", "Requested resource not found")
	}
	if err := d.pin(in.TableName); err != nil {
		return internalError(err)
	}
	hash := ti.keys[0]
	idx, ok := ti.indexes[in.IndexName]
	switch {
	case in.IndexName == "":
	case !ok:
		return d.callRaw(0, "Query", body) // minidyn names the missing index
	default:
		hash = idx[0]
	}
	var pkValue json.RawMessage
	if kc, ok := in.KeyConditions[hash]; ok && len(kc.AttributeValueList) == 1 {
		pkValue = kc.AttributeValueList[0]
	}
	for _, m := range keyEq.FindAllStringSubmatch(in.KeyConditionExpression, -1) {
		name := m[1]
		if strings.HasPrefix(name, "#") {
			name = in.ExpressionAttributeNames[name]
		}
		if name == hash {
			pkValue = in.ExpressionAttributeValues[m[2]]
		}
	}
	if pkValue == nil && in.IndexName == "" {
		return apiError(http.StatusBadRequest, "ValidationException", "Query condition missed key schema element: "+hash)
	}
	var status int
	var out []byte
	if in.IndexName == "" {
		shard := shardOf(pkValue)
		phys := physical(in.TableName, shard)
		b, err := withTable(body, in.TableName, phys)
		if err != nil {
			return apiError(http.StatusBadRequest, "SerializationException", err.Error())
		}
		status, out = d.callRaw(shard, "Query", b)
		out = renameResponse(out, phys, in.TableName)
	} else {
		status, out = d.queryIndex(in.TableName, ti, in.IndexName, pkValue, body, in.Limit, in.ScanIndexForward == nil || *in.ScanIndexForward,
			in.Select == "COUNT", in.ExclusiveStartKey)
	}
	if status != http.StatusOK || !d.model {
		return status, out
	}
	cs, err := queryCharge(in.TableName, in.IndexName, rawPartition(pkValue), out, in.ConsistentRead)
	if err != nil {
		return internalError(err)
	}
	if which := d.meterTake(cs); which != nil {
		return throttleError(cs, which)
	}
	return withConsumed(status, out, cs, in.ReturnConsumedCapacity, false)
}

// queryCharge is the charge of a Query that answered out: the items it
// returned are read at once, their sizes summed and rounded up to 4 KB
// once (developer guide, "DynamoDB read and write operations", Query),
// from the partition it read. An index is read eventually consistently.
func queryCharge(table, index, pk string, out []byte, consistent bool) ([]charge, error) {
	var page struct{ Items []item }
	if err := json.Unmarshal(out, &page); err != nil {
		return nil, err
	}
	size := 0
	for _, it := range page.Items {
		size += itemSize(it)
	}
	return []charge{{table: table, index: index, key: pk, read: readUnits(size, consistent && index == "")}}, nil
}

// itemKey is the LastEvaluatedKey of an item in an index: the table's key
// and the index's key attributes.
func itemKey(item map[string]json.RawMessage, keys ...[]string) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	for _, ks := range keys {
		for _, k := range ks {
			if v, ok := item[k]; ok {
				out[k] = v
			}
		}
	}
	return out
}

// compareAttr orders two scalar attribute values (S, N, B); typ is their
// declared type, or "" to take it from the values.
func compareAttr(a, b json.RawMessage, typ string) int {
	var av, bv map[string]string
	json.Unmarshal(a, &av)
	json.Unmarshal(b, &bv)
	if typ == "" {
		for t := range av {
			typ = t
		}
	}
	x, y := av[typ], bv[typ]
	if typ == "N" {
		fx, okx := new(big.Float).SetString(x)
		fy, oky := new(big.Float).SetString(y)
		if okx && oky {
			return fx.Cmp(fy)
		}
	}
	if typ == "B" {
		bx, _ := base64.StdEncoding.DecodeString(x)
		by, _ := base64.StdEncoding.DecodeString(y)
		return bytes.Compare(bx, by)
	}
	return strings.Compare(x, y)
}

// batchWrite routes each request of a BatchWriteItem to its item's shard.
// With the model on each request is metered as the PutItem or DeleteItem
// it is (developer guide, "DynamoDB read and write operations",
// BatchWriteItem): a request whose partition lacks capacity is not
// applied and comes back in UnprocessedItems, and when every request
// lacks it the call is ProvisionedThroughputExceededException.
func (d *dynamoFront) batchWrite(body []byte) (int, []byte) {
	var in server.BatchWriteItemInput
	if err := json.Unmarshal(body, &in); err != nil {
		return apiError(http.StatusBadRequest, "SerializationException", err.Error())
	}
	var ws []batchEntry
	var ids []itemID
	for table, writes := range in.RequestItems {
		for _, w := range writes {
			var attrs item
			switch {
			case w.PutRequest != nil:
				attrs = w.PutRequest.Item
			case w.DeleteRequest != nil:
				attrs = w.DeleteRequest.Key
			default:
				return apiError(http.StatusBadRequest, "ValidationException", "A write request needs a PutRequest or a DeleteRequest")
			}
			id, shard, key, err := d.locate(table, attrs)
			if err != nil {
				return locateError(err)
			}
			ws = append(ws, batchEntry{table: table, ref: itemRef{id, shard, key}, write: w})
			ids = append(ids, id)
		}
	}
	defer d.lock(ids, true)()
	refs := make([]itemRef, len(ws))
	for i, w := range ws {
		refs[i] = w.ref
	}
	if err := d.warmAll(refs); err != nil {
		return internalError(err)
	}
	defer d.touch(refs...)
	var cs []charge
	if d.model {
		for i, w := range ws {
			old, err := d.engines[w.ref.shard].get(physical(w.table, w.ref.shard), w.ref.key)
			if err != nil {
				return internalError(err)
			}
			var now item
			if w.write.PutRequest != nil {
				now = w.write.PutRequest.Item
			}
			cs = appendOwned(cs, d.writeCharges(w.table, w.ref.key, old, now, 1), i)
		}
	}
	taken, refused, which := d.takeEach(cs)
	if len(ws) > 0 && len(refused) == len(ws) {
		return throttleError(cs, which)
	}
	var req [tableShards]map[string][]server.WriteRequest
	logical := map[string]string{}
	unprocessed := map[string][]server.WriteRequest{}
	for i, w := range ws {
		if refused[i] {
			unprocessed[w.table] = append(unprocessed[w.table], w.write)
			continue
		}
		phys := physical(w.table, w.ref.shard)
		logical[phys] = w.table
		if req[w.ref.shard] == nil {
			req[w.ref.shard] = map[string][]server.WriteRequest{}
		}
		req[w.ref.shard][phys] = append(req[w.ref.shard][phys], w.write)
	}
	for shard, items := range req {
		if items == nil {
			continue
		}
		out, err := d.client(shard).BatchWriteItem(context.Background(), &server.BatchWriteItemInput{RequestItems: items})
		if err != nil {
			return renamedError(err, logical)
		}
		for phys, ws := range out.UnprocessedItems {
			unprocessed[logical[phys]] = append(unprocessed[logical[phys]], ws...)
		}
	}
	status, out := encodeOK(server.BatchWriteItemOutput{UnprocessedItems: unprocessed})
	return withConsumed(status, out, taken, string(in.ReturnConsumedCapacity), true)
}

// batchEntry is one request of a batch: its table, its item and, for a
// write, what it writes.
type batchEntry struct {
	table string
	ref   itemRef
	write server.WriteRequest
	key   item // a BatchGetItem's key as asked
}

// appendOwned appends charges that belong to request item owner.
func appendOwned(cs, mine []charge, owner int) []charge {
	for _, c := range mine {
		c.owner = owner
		cs = append(cs, c)
	}
	return cs
}

// takeEach meters each request item of a batch on its own, as DynamoDB
// does: it returns the charges taken, the request items refused, and the
// positions in cs of the charges that did not fit.
func (d *dynamoFront) takeEach(cs []charge) (taken []charge, refused map[int]bool, which []int) {
	refused = map[int]bool{}
	for start := 0; start < len(cs); {
		end := start
		for end < len(cs) && cs[end].owner == cs[start].owner {
			end++
		}
		group := cs[start:end]
		if w := d.meterTake(group); w != nil {
			refused[cs[start].owner] = true
			for _, i := range w {
				which = append(which, start+i)
			}
		} else {
			taken = append(taken, group...)
		}
		start = end
	}
	return taken, refused, which
}

// renamedError is the answer for an error of an operation on several
// shards, under the logical table names.
func renamedError(err error, logical map[string]string) (int, []byte) {
	status, out := wireError(err)
	for phys, table := range logical {
		out = renameResponse(out, phys, table)
	}
	return status, out
}

// batchGet routes each key of a BatchGetItem to its item's shard and
// answers under the logical table names. With the model on each key is
// metered as the GetItem it is: a key whose partition lacks capacity comes
// back in UnprocessedKeys without its item, and when every key lacks it
// the call is ProvisionedThroughputExceededException.
func (d *dynamoFront) batchGet(body []byte) (int, []byte) {
	var in server.BatchGetItemInput
	if err := json.Unmarshal(body, &in); err != nil {
		return apiError(http.StatusBadRequest, "SerializationException", err.Error())
	}
	var req [tableShards]map[string]server.KeysAndAttributes
	logical := map[string]string{}
	var ids []itemID
	var gets []batchEntry
	for table, spec := range in.RequestItems {
		for _, k := range spec.Keys {
			id, shard, key, err := d.locate(table, k)
			if err != nil {
				return locateError(err)
			}
			ids = append(ids, id)
			gets = append(gets, batchEntry{table: table, ref: itemRef{id, shard, key}, key: k})
			phys := physical(table, shard)
			logical[phys] = table
			if req[shard] == nil {
				req[shard] = map[string]server.KeysAndAttributes{}
			}
			ka, ok := req[shard][phys]
			if !ok {
				ka = spec
				ka.Keys = nil
			}
			ka.Keys = append(ka.Keys, k)
			req[shard][phys] = ka
		}
	}
	defer d.lock(ids, false)()
	refs := make([]itemRef, len(gets))
	for i, g := range gets {
		refs[i] = g.ref
	}
	if err := d.warmAll(refs); err != nil {
		return internalError(err)
	}
	merged := map[string][]item{}
	for table := range in.RequestItems {
		merged[table] = []item{}
	}
	for shard, keys := range req {
		if keys == nil {
			continue
		}
		out, err := d.client(shard).BatchGetItem(context.Background(), &server.BatchGetItemInput{RequestItems: keys})
		if err != nil {
			return renamedError(err, logical)
		}
		for phys, items := range out.Responses {
			merged[logical[phys]] = append(merged[logical[phys]], items...)
		}
	}
	if !d.model {
		return encodeOK(map[string]any{"Responses": merged, "UnprocessedKeys": map[string]any{}})
	}
	return d.meterBatchGet(in, gets, merged)
}

// meterBatchGet meters a BatchGetItem's keys, each on its item's size
// (the item as returned) or the minimum for an absent one, and answers.
func (d *dynamoFront) meterBatchGet(in server.BatchGetItemInput, gets []batchEntry, merged map[string][]item) (int, []byte) {
	found := map[itemID]item{}
	for table, items := range merged {
		for _, it := range items {
			if id, _, _, err := d.locate(table, it); err == nil {
				found[id] = it
			}
		}
	}
	var cs []charge
	for i, g := range gets {
		ti, err := d.info(g.table)
		if err != nil {
			return locateError(err)
		}
		c := tableRead(g.table, ti, g.ref.key, itemSize(found[g.ref.id]), aws.ToBool(in.RequestItems[g.table].ConsistentRead), 1)
		cs = appendOwned(cs, []charge{c}, i)
	}
	taken, refused, which := d.takeEach(cs)
	if len(gets) > 0 && len(refused) == len(gets) {
		return throttleError(cs, which)
	}
	unprocessed := map[string]server.KeysAndAttributes{}
	drop := map[itemID]bool{}
	for i, g := range gets {
		if !refused[i] {
			continue
		}
		drop[g.ref.id] = true
		ka, ok := unprocessed[g.table]
		if !ok {
			ka = in.RequestItems[g.table]
			ka.Keys = nil
		}
		ka.Keys = append(ka.Keys, g.key)
		unprocessed[g.table] = ka
	}
	if len(drop) > 0 {
		for table, items := range merged {
			merged[table] = slices.DeleteFunc(items, func(it item) bool {
				id, _, _, err := d.locate(table, it)
				return err == nil && drop[id]
			})
		}
	}
	status, out := encodeOK(map[string]any{"Responses": merged, "UnprocessedKeys": unprocessed})
	return withConsumed(status, out, taken, string(in.ReturnConsumedCapacity), true)
}
