package localaws

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
)

// dynamoFront sits in front of minidyn and absorbs its gaps:
//
//   - TransactWriteItems and TransactGetItems run here, over minidyn's
//     single-item operations, with per-item locks (transact.go): their
//     cost is proportional to the items they touch, never to the size of
//     the tables (minidyn's own takes a global lock and copies every table
//     a transaction touches).
//   - Single-item writes take the same item's lock exclusively and GetItem
//     takes it shared, so they serialise with transactions on that item:
//     no GetItem ever sees half a transaction.
//   - PutItem with ReturnValues=ALL_OLD returns the item it replaced
//     (minidyn echoes the new one).
//   - The AWS CLI's inspection calls are answered (cli.go).
//
// Other operations pass through unchanged.
type dynamoFront struct {
	next http.Handler

	keyMu sync.RWMutex
	infos map[string]*tableInfo // by logical table name

	locks [lockStripes]sync.RWMutex

	meta tableMeta // what minidyn does not keep (cli.go)
}

// lockStripes is the number of item locks. Two items share a lock only by
// hash collision, which costs some concurrency and never correctness:
// locks are always taken in stripe order.
const lockStripes = 1024

const targetPrefix = "DynamoDB_20120810."

func newDynamoFront(next http.Handler) *dynamoFront {
	return &dynamoFront{next: next, infos: map[string]*tableInfo{}}
}

func (d *dynamoFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), targetPrefix)
	switch op {
	case "TransactWriteItems", "TransactGetItems", "PutItem", "UpdateItem", "DeleteItem", "GetItem",
		"Query", "BatchWriteItem", "BatchGetItem",
		"ListTables", "DescribeTable", "DescribeTimeToLive", "UpdateTimeToLive", "DescribeContinuousBackups",
		"Scan", "CreateTable", "DeleteTable", "UpdateTable":
	default:
		d.next.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeAPIError(w, http.StatusBadRequest, "SerializationException", err.Error())
		return
	}
	status, out := d.serve(op, body)
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(status)
	w.Write(out)
}

func (d *dynamoFront) serve(op string, body []byte) (int, []byte) {
	switch op {
	case "TransactWriteItems":
		return d.transactWrite(body)
	case "TransactGetItems":
		return d.transactGet(body)
	case "PutItem":
		return d.putItem(body)
	case "UpdateItem", "DeleteItem":
		return d.single(op, body, true)
	case "GetItem":
		return d.single(op, body, false)
	case "Query":
		return d.query(body)
	case "BatchWriteItem":
		return d.batchWrite(body)
	case "BatchGetItem":
		return d.batchGet(body)
	default:
		return d.cli(op, body)
	}
}

// call runs one operation on minidyn in-process.
func (d *dynamoFront) call(op string, in any) (int, []byte) {
	body, err := json.Marshal(in)
	if err != nil {
		return apiError(http.StatusInternalServerError, "InternalFailure", err.Error())
	}
	return d.callRaw(op, body)
}

func (d *dynamoFront) callRaw(op string, body []byte) (int, []byte) {
	req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	req.Header.Set("X-Amz-Target", targetPrefix+op)
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	rec := httptest.NewRecorder()
	d.next.ServeHTTP(rec, req)
	return rec.Code, rec.Body.Bytes()
}

// errorType returns the short error type of an error body
// ("ConditionalCheckFailedException"), or "".
func errorType(body []byte) string {
	var e struct {
		Type string `json:"__type"`
	}
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	if i := strings.LastIndexByte(e.Type, '#'); i >= 0 {
		return e.Type[i+1:]
	}
	return e.Type
}

func apiError(status int, typ, msg string) (int, []byte) {
	b, _ := json.Marshal(map[string]string{"__type": "com.amazonaws.dynamodb.v20120810#" + typ, "message": msg})
	return status, b
}

func writeAPIError(w http.ResponseWriter, status int, typ, msg string) {
	status, b := apiError(status, typ, msg)
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(status)
	w.Write(b)
}

var errNoTable = errors.New("Requested resource not found")

// keyNames returns a table's key attribute names, hash first.
func (d *dynamoFront) keyNames(table string) ([]string, error) {
	ti, err := d.info(table)
	if err != nil {
		return nil, err
	}
	return ti.keys, nil
}

func (d *dynamoFront) forgetTable(table string) {
	d.keyMu.Lock()
	delete(d.infos, table)
	d.keyMu.Unlock()
}

// locate returns an item's identity, shard and key.
func (d *dynamoFront) locate(table string, attrs map[string]json.RawMessage) (itemID, int, map[string]json.RawMessage, error) {
	id, key, err := d.idOf(table, attrs)
	if err != nil {
		return "", 0, nil, err
	}
	names, _ := d.keyNames(table)
	return id, shardOf(key[names[0]]), key, nil
}

// itemID is an item's identity: its table and key values, canonical.
type itemID string

// idOf returns the identity of the item under key (or of item, whose key
// attributes are picked out), and the key itself.
func (d *dynamoFront) idOf(table string, attrs map[string]json.RawMessage) (itemID, map[string]json.RawMessage, error) {
	names, err := d.keyNames(table)
	if err != nil {
		return "", nil, err
	}
	var b strings.Builder
	b.WriteString(table)
	key := make(map[string]json.RawMessage, len(names))
	for _, n := range names {
		raw, ok := attrs[n]
		if !ok {
			return "", nil, fmt.Errorf("One of the required keys was not given a value: %s", n)
		}
		var v map[string]string
		if err := json.Unmarshal(raw, &v); err != nil || len(v) != 1 {
			return "", nil, fmt.Errorf("The key attribute %s must be a scalar (S, N or B)", n)
		}
		for typ, val := range v {
			b.WriteString("\x00" + typ + ":" + val)
		}
		key[n] = raw
	}
	return itemID(b.String()), key, nil
}

func stripeOf(id itemID) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % lockStripes)
}

// lock takes the locks of ids, in stripe order, exclusively or shared,
// and returns the function that releases them.
func (d *dynamoFront) lock(ids []itemID, exclusive bool) func() {
	stripes := make([]int, 0, len(ids))
	for _, id := range ids {
		stripes = append(stripes, stripeOf(id))
	}
	sort.Ints(stripes)
	stripes = slices.Compact(stripes)
	for _, s := range stripes {
		if exclusive {
			d.locks[s].Lock()
		} else {
			d.locks[s].RLock()
		}
	}
	return func() {
		for _, s := range stripes {
			if exclusive {
				d.locks[s].Unlock()
			} else {
				d.locks[s].RUnlock()
			}
		}
	}
}

// get reads an item of a (physical) table consistently through minidyn;
// nil when absent.
func (d *dynamoFront) get(table string, key map[string]json.RawMessage) (map[string]json.RawMessage, error) {
	status, body := d.call("GetItem", map[string]any{"TableName": table, "Key": key, "ConsistentRead": true})
	if status != http.StatusOK {
		return nil, fmt.Errorf("get: %s", body)
	}
	var out struct{ Item map[string]json.RawMessage }
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, err
	}
	return out.Item, nil
}

// single runs UpdateItem, DeleteItem or GetItem under its item's lock.
func (d *dynamoFront) single(op string, body []byte, exclusive bool) (int, []byte) {
	var in struct {
		TableName string
		Key       map[string]json.RawMessage
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return apiError(http.StatusBadRequest, "SerializationException", err.Error())
	}
	id, shard, _, err := d.locate(in.TableName, in.Key)
	if err == errNoTable {
		return apiError(http.StatusBadRequest, "ResourceNotFoundException", "Requested resource not found")
	}
	if err != nil {
		return apiError(http.StatusBadRequest, "ValidationException", err.Error())
	}
	phys := physical(in.TableName, shard)
	if body, err = withTable(body, in.TableName, phys); err != nil {
		return apiError(http.StatusBadRequest, "SerializationException", err.Error())
	}
	defer d.lock([]itemID{id}, exclusive)()
	status, out := d.callRaw(op, body)
	return status, renameResponse(out, phys, in.TableName)
}

// putItem runs PutItem under its item's lock, and answers
// ReturnValues=ALL_OLD with the item the put replaced, or none for a new
// key, as DynamoDB does.
func (d *dynamoFront) putItem(body []byte) (int, []byte) {
	var in struct {
		TableName    string
		Item         map[string]json.RawMessage
		ReturnValues string
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return apiError(http.StatusBadRequest, "SerializationException", err.Error())
	}
	id, shard, key, err := d.locate(in.TableName, in.Item)
	if err == errNoTable {
		return apiError(http.StatusBadRequest, "ResourceNotFoundException", "Requested resource not found")
	}
	if err != nil {
		return apiError(http.StatusBadRequest, "ValidationException", err.Error())
	}
	phys := physical(in.TableName, shard)
	if body, err = withTable(body, in.TableName, phys); err != nil {
		return apiError(http.StatusBadRequest, "SerializationException", err.Error())
	}
	defer d.lock([]itemID{id}, true)()
	if in.ReturnValues != "ALL_OLD" {
		status, out := d.callRaw("PutItem", body)
		return status, renameResponse(out, phys, in.TableName)
	}
	old, err := d.get(phys, key)
	if err != nil {
		return apiError(http.StatusInternalServerError, "InternalServerError", err.Error())
	}
	status, out := d.callRaw("PutItem", body)
	if status != http.StatusOK {
		return status, renameResponse(out, phys, in.TableName)
	}
	out, _ = json.Marshal(map[string]any{"Attributes": old})
	return status, out
}
