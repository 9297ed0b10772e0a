package localaws

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/big"
	"net/http"
	"regexp"
	"sort"
	"strings"

	"github.com/truora/minidyn/server"
)

// Each table is kept as shards: minidyn tables of the same schema, one per
// hash of the partition key value. minidyn keeps every table's keys in a
// slice it sorts again on each new key, so inserting costs time in
// proportion to the table's size; shards divide that size by
// tableShards. An item, and so every item of one partition, lives in one
// shard; a query on the table's own key reads one shard; a query on a
// global secondary index and a scan read every shard and merge, in index
// order, behind an opaque LastEvaluatedKey.
const tableShards = 64

const cursorAttr = "hookline_cursor"

func physical(table string, shard int) string { return fmt.Sprintf("%s.s%02d", table, shard) }

// tableInfo is a table's key schema and its indexes' key schemas.
type tableInfo struct {
	keys    []string // hash, range
	types   map[string]string
	indexes map[string][]string // index name -> hash, range
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
				IndexName string
				KeySchema []struct{ AttributeName, KeyType string }
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
	ti = &tableInfo{keys: order(out.Table.KeySchema), types: map[string]string{}, indexes: map[string][]string{}}
	for _, a := range out.Table.AttributeDefinitions {
		ti.types[a.AttributeName] = a.AttributeType
	}
	for _, g := range out.Table.GlobalSecondaryIndexes {
		ti.indexes[g.IndexName] = order(g.KeySchema)
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
		Limit             int
		ExclusiveStartKey map[string]json.RawMessage
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
	return jsonOK(resp)
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
	if in.IndexName == "" {
		var pkValue json.RawMessage
		if kc, ok := in.KeyConditions[ti.keys[0]]; ok && len(kc.AttributeValueList) == 1 {
			pkValue = kc.AttributeValueList[0]
		}
		for _, m := range keyEq.FindAllStringSubmatch(in.KeyConditionExpression, -1) {
			name := m[1]
			if strings.HasPrefix(name, "#") {
				name = in.ExpressionAttributeNames[name]
			}
			if name == ti.keys[0] {
				pkValue = in.ExpressionAttributeValues[m[2]]
			}
		}
		if pkValue == nil {
			return apiError(http.StatusBadRequest, "ValidationException", "Query condition missed key schema element: "+ti.keys[0])
		}
		shard := shardOf(pkValue)
		phys := physical(in.TableName, shard)
		b, err := withTable(body, in.TableName, phys)
		if err != nil {
			return apiError(http.StatusBadRequest, "SerializationException", err.Error())
		}
		status, out := d.callRaw(shard, "Query", b)
		return status, renameResponse(out, phys, in.TableName)
	}
	idx, ok := ti.indexes[in.IndexName]
	if !ok {
		return d.callRaw(0, "Query", body) // minidyn names the missing index
	}
	return d.queryIndex(in.TableName, ti, idx, body, in.Limit, in.ScanIndexForward == nil || *in.ScanIndexForward,
		in.Select == "COUNT", in.ExclusiveStartKey)
}

// indexState is the cursor of a merged index query: per shard, where to
// resume, or done.
type indexState struct {
	Done []bool
	ESK  []map[string]json.RawMessage
}

func (d *dynamoFront) queryIndex(table string, ti *tableInfo, idx []string, body []byte, limit int, forward, countOnly bool,
	esk map[string]json.RawMessage) (int, []byte) {
	st := indexState{Done: make([]bool, tableShards), ESK: make([]map[string]json.RawMessage, tableShards)}
	if esk != nil && !decodeCursor(esk, &st) {
		return apiError(http.StatusBadRequest, "ValidationException", "The provided starting key is invalid")
	}
	type hit struct {
		shard int
		item  map[string]json.RawMessage
	}
	var hits []hit
	pages := make([]pageResult, tableShards)
	scanned := 0
	for s := range tableShards {
		if st.Done[s] {
			continue
		}
		fields := map[string]any{"TableName": physical(table, s), "ExclusiveStartKey": nil, "Select": nil}
		if st.ESK[s] != nil {
			fields["ExclusiveStartKey"] = st.ESK[s]
		}
		b, err := withFields(body, fields)
		if err != nil {
			return apiError(http.StatusBadRequest, "SerializationException", err.Error())
		}
		status, out := d.callRaw(s, "Query", b)
		if status != http.StatusOK {
			return status, renameResponse(out, physical(table, s), table)
		}
		if err := json.Unmarshal(out, &pages[s]); err != nil {
			return internalError(err)
		}
		scanned += max(pages[s].ScannedCount, len(pages[s].Items))
		for _, it := range pages[s].Items {
			hits = append(hits, hit{s, it})
		}
	}
	if len(idx) > 1 {
		rk, typ := idx[1], ti.types[idx[1]]
		sort.SliceStable(hits, func(i, j int) bool {
			c := compareAttr(hits[i].item[rk], hits[j].item[rk], typ)
			if forward {
				return c < 0
			}
			return c > 0
		})
	}
	if limit > 0 && len(hits) > limit {
		hits = hits[:limit]
	}
	used := make([]int, tableShards)
	last := make([]map[string]json.RawMessage, tableShards)
	items := make([]map[string]json.RawMessage, 0, len(hits))
	for _, h := range hits {
		used[h.shard]++
		last[h.shard] = h.item
		items = append(items, h.item)
	}
	more := false
	for s := range tableShards {
		if st.Done[s] {
			continue
		}
		p := pages[s]
		switch {
		case used[s] == len(p.Items) && p.LastEvaluatedKey == nil:
			st.Done[s], st.ESK[s] = true, nil
		case used[s] == len(p.Items):
			st.ESK[s] = p.LastEvaluatedKey
		case used[s] > 0:
			st.ESK[s] = itemKey(last[s], ti.keys, idx)
		}
		if !st.Done[s] {
			more = true
		}
	}
	resp := map[string]any{"Count": len(items), "ScannedCount": scanned}
	if !countOnly {
		resp["Items"] = items
	}
	if more {
		resp["LastEvaluatedKey"] = encodeCursor(st)
	}
	return jsonOK(resp)
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
func (d *dynamoFront) batchWrite(body []byte) (int, []byte) {
	var in server.BatchWriteItemInput
	if err := json.Unmarshal(body, &in); err != nil {
		return apiError(http.StatusBadRequest, "SerializationException", err.Error())
	}
	var req [tableShards]map[string][]server.WriteRequest
	logical := map[string]string{}
	var ids []itemID
	var refs []itemRef
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
			phys := physical(table, shard)
			logical[phys] = table
			if req[shard] == nil {
				req[shard] = map[string][]server.WriteRequest{}
			}
			req[shard][phys] = append(req[shard][phys], w)
			ids = append(ids, id)
			refs = append(refs, itemRef{id, shard, key})
		}
	}
	defer d.lock(ids, true)()
	if err := d.warmAll(refs); err != nil {
		return internalError(err)
	}
	defer d.touch(refs...)
	unprocessed := map[string][]server.WriteRequest{}
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
	return encodeOK(server.BatchWriteItemOutput{UnprocessedItems: unprocessed})
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
// answers under the logical table names.
func (d *dynamoFront) batchGet(body []byte) (int, []byte) {
	var in server.BatchGetItemInput
	if err := json.Unmarshal(body, &in); err != nil {
		return apiError(http.StatusBadRequest, "SerializationException", err.Error())
	}
	var req [tableShards]map[string]server.KeysAndAttributes
	logical := map[string]string{}
	var ids []itemID
	var refs []itemRef
	for table, spec := range in.RequestItems {
		for _, k := range spec.Keys {
			id, shard, key, err := d.locate(table, k)
			if err != nil {
				return locateError(err)
			}
			ids, refs = append(ids, id), append(refs, itemRef{id, shard, key})
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
	return encodeOK(map[string]any{"Responses": merged, "UnprocessedKeys": map[string]any{}})
}
