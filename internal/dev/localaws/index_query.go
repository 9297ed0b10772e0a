package localaws

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/truora/minidyn/interpreter"
	minitypes "github.com/truora/minidyn/types"
)

// A query on a global secondary index is answered by the front, not by
// minidyn's index. minidyn keeps an index as a sorted list of index keys
// beside a map from item to index key, and its bookkeeping loses the two's
// agreement when an item enters or leaves an index: an UpdateItem that
// gives an item its first index key overwrites the smallest entry of the
// list with it, and an update or put that takes the index attributes away
// leaves the old entry behind; a delete then removes whatever entry sits
// where the item's key would be. A query walks the list and the map side
// by side and drops every item after the first disagreement, in one
// direction and not the other (TestIndexQueriesAnswerAsTheModel).
//
// So the front reads each shard's items with a Scan filtered by the key
// condition, and merges, orders, pages and projects them itself:
//   - the order is the index's sort key, ties broken by the table's key;
//   - Limit counts the items the key condition selects, before the
//     FilterExpression, as in DynamoDB; the filter runs as a second Scan
//     over the items of the page;
//   - LastEvaluatedKey is the last evaluated item's table and index key,
//     as DynamoDB's, and an ExclusiveStartKey resumes after that item;
//   - the index's projection (KEYS_ONLY, INCLUDE) and a
//     ProjectionExpression are applied to the items returned.

// Placeholders of the filter the front sends to a shard.
const (
	indexHashName  = "#hookline_ih"
	indexHashValue = ":hookline_iv"
)

// indexQueryInput is what an index query reads of its request.
type indexQueryInput struct {
	KeyConditionExpression    string
	FilterExpression          string
	ProjectionExpression      string
	ExpressionAttributeNames  map[string]string
	ExpressionAttributeValues map[string]*minitypes.Item
}

// indexHit is an item of an index query and the shard it came from.
type indexHit struct {
	shard int
	item  map[string]json.RawMessage
}

// queryIndex answers a Query on an index whose key condition names the
// index partition pk.
func (d *dynamoFront) queryIndex(table string, ti *tableInfo, index string, pk json.RawMessage, body []byte, limit int,
	forward, countOnly bool, esk map[string]json.RawMessage) (int, []byte) {
	var in indexQueryInput
	if err := json.Unmarshal(body, &in); err != nil {
		return apiError(http.StatusBadRequest, "SerializationException", err.Error())
	}
	idx := ti.indexes[index]
	if strings.TrimSpace(in.KeyConditionExpression) == "" || pk == nil {
		return apiError(http.StatusBadRequest, "ValidationException", "Query condition missed key schema element: "+idx[0])
	}
	if msg := in.unused(); msg != "" {
		return apiError(http.StatusBadRequest, "ValidationException", msg)
	}
	if in.ExpressionAttributeNames == nil {
		in.ExpressionAttributeNames = map[string]string{}
	}
	parts, status, out := d.scanPartition(table, idx[0], pk)
	if parts == nil {
		return status, out
	}
	hits := parts[:0]
	for _, h := range parts {
		keys := map[string]*minitypes.Item{}
		for _, k := range idx {
			if h.item[k] == nil {
				break
			}
			var v minitypes.Item
			if err := json.Unmarshal(h.item[k], &v); err != nil {
				return internalError(err)
			}
			keys[k] = &v
		}
		if len(keys) < len(idx) {
			continue // no sort key: not in the index
		}
		ok, err := (&interpreter.Language{}).Match(interpreter.MatchInput{TableName: table, Expression: in.KeyConditionExpression,
			ExpressionType: interpreter.ExpressionTypeKey, Item: keys, Attributes: in.ExpressionAttributeValues,
			Aliases: in.ExpressionAttributeNames})
		if err != nil {
			return apiError(http.StatusBadRequest, "ValidationException", err.Error())
		}
		if ok {
			hits = append(hits, h)
		}
	}
	order := indexOrder(ti, idx, forward)
	slices.SortFunc(hits, func(a, b indexHit) int { return order(a.item, b.item) })
	start := 0
	if esk != nil {
		for _, k := range append(slices.Clone(ti.keys), idx...) {
			if _, ok := esk[k]; !ok {
				return apiError(http.StatusBadRequest, "ValidationException", "The provided starting key is invalid")
			}
		}
		start, _ = slices.BinarySearchFunc(hits, esk, func(h indexHit, k map[string]json.RawMessage) int {
			if order(h.item, k) <= 0 {
				return -1
			}
			return 1
		})
	}
	page := hits[start:]
	more := limit > 0 && len(page) > limit
	if more {
		page = page[:limit]
	}
	items := make([]map[string]json.RawMessage, 0, len(page))
	for _, h := range page {
		it, err := in.answer(h.item, ti, idx, ti.projections[index])
		if err != nil {
			return apiError(http.StatusBadRequest, "ValidationException", err.Error())
		}
		if it != nil {
			items = append(items, it)
		}
	}
	resp := map[string]any{"Count": len(items), "ScannedCount": len(page)}
	if !countOnly {
		resp["Items"] = items
	}
	if more {
		resp["LastEvaluatedKey"] = itemKey(page[len(page)-1].item, ti.keys, idx)
	}
	return jsonOK(resp)
}

// unused names the placeholders no expression of the query uses, which
// DynamoDB refuses (as minidyn does, by the same test of substrings).
func (in indexQueryInput) unused() string {
	exprs := in.KeyConditionExpression + " " + in.FilterExpression + " " + in.ProjectionExpression
	find := func(keys []string) string {
		var out []string
		for _, k := range keys {
			if !strings.Contains(exprs, k) {
				out = append(out, k)
			}
		}
		return strings.Join(out, ", ")
	}
	if ks := find(slices.Sorted(maps.Keys(in.ExpressionAttributeNames))); ks != "" {
		return "Value provided in ExpressionAttributeNames unused in expressions: keys: {" + ks + "}"
	}
	if ks := find(slices.Sorted(maps.Keys(in.ExpressionAttributeValues))); ks != "" {
		return "Value provided in ExpressionAttributeValues unused in expressions: keys: {" + ks + "}"
	}
	return ""
}

// answer is what an evaluated item returns: nil when it fails the
// FilterExpression, else the item as the index projects it, narrowed to
// the ProjectionExpression.
func (in indexQueryInput) answer(raw map[string]json.RawMessage, ti *tableInfo, idx []string, p projection) (map[string]json.RawMessage, error) {
	raw = projectRaw(raw, ti, idx, p)
	if in.FilterExpression == "" && in.ProjectionExpression == "" {
		return raw, nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	var it map[string]*minitypes.Item
	if err := json.Unmarshal(b, &it); err != nil {
		return nil, err
	}
	lang := &interpreter.Language{}
	if in.FilterExpression != "" {
		ok, err := lang.Match(interpreter.MatchInput{Expression: in.FilterExpression, ExpressionType: interpreter.ExpressionTypeFilter,
			Item: it, Attributes: in.ExpressionAttributeValues, Aliases: in.ExpressionAttributeNames})
		if err != nil || !ok {
			return nil, err
		}
		if in.ProjectionExpression == "" {
			return raw, nil
		}
	}
	if it, err = lang.Project(interpreter.ProjectInput{Expression: in.ProjectionExpression, Item: it,
		Aliases: in.ExpressionAttributeNames}); err != nil {
		return nil, err
	}
	if b, err = json.Marshal(it); err != nil {
		return nil, err
	}
	var wire item
	if err := json.Unmarshal(b, &wire); err != nil {
		return nil, err
	}
	if b, err = marshalKeepingEmpty(wire); err != nil {
		return nil, err
	}
	var out map[string]json.RawMessage
	return out, json.Unmarshal(b, &out)
}

// scanPartition reads the items of one index partition from every shard:
// a Scan of each, filtered on the index's partition key alone.
func (d *dynamoFront) scanPartition(table, hash string, pk json.RawMessage) ([]indexHit, int, []byte) {
	req := map[string]any{"FilterExpression": indexHashName + " = " + indexHashValue,
		"ExpressionAttributeNames":  map[string]string{indexHashName: hash},
		"ExpressionAttributeValues": map[string]json.RawMessage{indexHashValue: pk}}
	hits := []indexHit{}
	for s := range tableShards {
		req["TableName"] = physical(table, s)
		delete(req, "ExclusiveStartKey")
		for {
			b, err := json.Marshal(req)
			if err != nil {
				st, out := internalError(err)
				return nil, st, out
			}
			status, out := d.callRaw(s, "Scan", b)
			if status != http.StatusOK {
				return nil, status, renameResponse(out, physical(table, s), table)
			}
			var p pageResult
			if err := json.Unmarshal(out, &p); err != nil {
				st, out := internalError(err)
				return nil, st, out
			}
			for _, it := range p.Items {
				hits = append(hits, indexHit{s, it})
			}
			if len(p.LastEvaluatedKey) == 0 {
				break
			}
			req["ExclusiveStartKey"] = p.LastEvaluatedKey
		}
	}
	return hits, http.StatusOK, nil
}

// indexOrder compares two items (or an item and a key) in the order of an
// index query: by the index's sort key, then by the table's key, reversed
// when the query runs backwards.
func indexOrder(ti *tableInfo, idx []string, forward bool) func(a, b map[string]json.RawMessage) int {
	attrs := append(slices.Clone(idx[1:]), ti.keys...)
	return func(a, b map[string]json.RawMessage) int {
		for _, k := range attrs {
			if c := compareAttr(a[k], b[k], ti.types[k]); c != 0 {
				if forward {
					return c
				}
				return -c
			}
		}
		return 0
	}
}

// projectRaw is an item as an index with projection p holds it.
func projectRaw(it map[string]json.RawMessage, ti *tableInfo, idx []string, p projection) map[string]json.RawMessage {
	if p.ProjectionType == "ALL" || p.ProjectionType == "" {
		return it
	}
	out := map[string]json.RawMessage{}
	for _, names := range [][]string{ti.keys, idx, p.NonKeyAttributes} {
		for _, n := range names {
			if v, ok := it[n]; ok {
				out[n] = v
			}
		}
	}
	return out
}
