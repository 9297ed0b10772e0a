package localaws

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/truora/minidyn/server"
)

// dynamoFront sits in front of minidyn's engine and absorbs its gaps:
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
//   - A write whose condition fails returns the item with
//     ReturnValuesOnConditionCheckFailure=ALL_OLD (minidyn's PutItem and
//     DeleteItem return none).
//   - The AWS CLI's inspection calls are answered (cli.go).
//
// Item operations call minidyn's engine with typed values (engine.go);
// other operations pass through its JSON API unchanged.
type dynamoFront struct {
	// engines hold the shards: shard s of every table lives in
	// engines[s]. minidyn serialises every operation of an engine behind
	// one lock, so operations on different shards run in parallel.
	engines [tableShards]engine

	keyMu sync.RWMutex
	infos map[string]*tableInfo // by logical table name

	locks *itemLocks // conflict.go

	meta tableMeta // what minidyn does not keep (cli.go)

	spill spill // items moved out of minidyn (spill.go)

	// model is AWS's contention and limits: transactions that meet a
	// running transaction are cancelled instead of waiting (conflict.go).
	model bool
	// singleConflicts counts the single-item writes refused with
	// TransactionConflictException.
	singleConflicts atomic.Int64

	tokens *tokens // TransactWriteItems client tokens (token.go)

	// meter is the partitions' throughput with the model on (capacity.go).
	meter *meter

	// expiry deletes items whose TTL passed, when on (expiry.go).
	expiry expiry

	// grants refuses the calls a template function is not granted
	// (iam.go); nil checks nothing.
	grants *grants
}

// lockStripes is the number of item locks. Two items share a lock only by
// hash collision, which costs some concurrency and never correctness:
// locks are always taken in stripe order.
const lockStripes = 1024

const targetPrefix = "DynamoDB_20120810."

// newDynamoFront returns an empty DynamoDB that keeps hotItems items in
// minidyn (0: DefaultHotItems; < 0: all of them).
func newDynamoFront(hotItems int) *dynamoFront {
	d := &dynamoFront{infos: map[string]*tableInfo{}, spill: newSpill(hotItems), model: true,
		locks: newItemLocks(), tokens: newTokens(), meter: newMeter(),
		expiry: expiry{now: time.Now, latest: map[itemID]int64{}}}
	for s := range d.engines {
		d.engines[s] = newEngine()
	}
	return d
}

// client returns the engine that holds a shard.
func (d *dynamoFront) client(shard int) *server.Client { return d.engines[shard].c }

func (d *dynamoFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), targetPrefix)
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeAPIError(w, http.StatusBadRequest, "SerializationException", err.Error())
		return
	}
	status, out := d.grants.dynamoDenial(r, op, body)
	if status == 0 {
		status, out = d.serve(op, body)
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(status)
	w.Write(out)
}

func (d *dynamoFront) serve(op string, body []byte) (int, []byte) {
	switch op {
	case "TransactWriteItems", "PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem":
		defer d.trim()
	}
	switch op {
	case "TransactWriteItems":
		return d.transactWriteOnce(body)
	case "TransactGetItems":
		return d.transactGet(body)
	case "PutItem":
		return d.putItem(body)
	case "UpdateItem":
		return d.updateItem(body)
	case "DeleteItem":
		return d.deleteItem(body)
	case "GetItem":
		return d.getItem(body)
	case "Query":
		return d.query(body)
	case "BatchWriteItem":
		return d.batchWrite(body)
	case "BatchGetItem":
		return d.batchGet(body)
	case "ListTables", "DescribeTable", "DescribeTimeToLive", "UpdateTimeToLive", "DescribeContinuousBackups",
		"Scan", "CreateTable", "DeleteTable", "UpdateTable":
		return d.cli(op, body)
	default:
		return d.callRaw(0, op, body)
	}
}

// call runs one operation on a shard's engine from a value encoded as its
// JSON request.
func (d *dynamoFront) call(shard int, op string, in any) (int, []byte) {
	body, err := json.Marshal(in)
	if err != nil {
		return apiError(http.StatusInternalServerError, "InternalFailure", err.Error())
	}
	return d.callRaw(shard, op, body)
}

// callRaw runs one operation on a shard's engine from its JSON request.
func (d *dynamoFront) callRaw(shard int, op string, body []byte) (int, []byte) {
	return d.engines[shard].serveJSON(op, body)
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

// internalError answers a failure of the emulator itself.
func internalError(err error) (int, []byte) {
	return apiError(http.StatusInternalServerError, "InternalServerError", err.Error())
}

func writeAPIError(w http.ResponseWriter, status int, typ, msg string) {
	status, b := apiError(status, typ, msg)
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(status)
	w.Write(b)
}

var errNoTable = errors.New("Requested resource not found")

// locateError answers a request whose item could not be located.
func locateError(err error) (int, []byte) {
	if err == errNoTable {
		return apiError(http.StatusBadRequest, "ResourceNotFoundException", "Requested resource not found")
	}
	return apiError(http.StatusBadRequest, "ValidationException", err.Error())
}

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

// itemID is an item's identity: its table and key values, canonical.
type itemID string

// locate returns the identity, the shard and the key of the item under
// key (or of item, whose key attributes are picked out).
func (d *dynamoFront) locate(table string, attrs item) (itemID, int, item, error) {
	names, err := d.keyNames(table)
	if err != nil {
		return "", 0, nil, err
	}
	var b strings.Builder
	b.WriteString(table)
	key := make(item, len(names))
	for _, n := range names {
		v, ok := attrs[n]
		if !ok {
			return "", 0, nil, fmt.Errorf("One of the required keys was not given a value: %s", n)
		}
		typ, val, ok := scalar(v)
		if !ok {
			return "", 0, nil, fmt.Errorf("The key attribute %s must be a scalar (S, N or B)", n)
		}
		b.WriteString("\x00" + typ + ":" + val)
		key[n] = v
	}
	return itemID(b.String()), shardOfValue(key[names[0]]), key, nil
}

func stripeOf(id itemID) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % lockStripes)
}

// opened is the item of a single-item operation, located, locked and
// brought into its shard's engine: its table's deployed (logical) and
// shard (phys) names, and its identity, shard and key.
type opened struct {
	logical, phys string
	itemRef
	close func() // releases the lock (after touching the item, for a write)
}

// open locates the item under attrs (a key, or a whole item whose key
// attributes are picked out) in the table *table names, points *table at
// its shard's table, takes its lock in mode m and warms it. It answers the
// request's failure instead when any step fails.
func (d *dynamoFront) open(table **string, attrs item, m lockMode) (*opened, int, []byte) {
	logical := aws.ToString(*table)
	id, shard, key, err := d.locate(logical, attrs)
	if err != nil {
		status, b := locateError(err)
		return nil, status, b
	}
	o := &opened{logical: logical, phys: physical(logical, shard), itemRef: itemRef{id, shard, key}}
	*table = aws.String(o.phys)
	release, status, b := d.lockItem(id, m)
	if release == nil {
		return nil, status, b
	}
	if err := d.warm(o.itemRef); err != nil {
		release()
		status, b := internalError(err)
		return nil, status, b
	}
	o.close = release
	if m.exclusive() {
		o.close = func() {
			d.touch(o.itemRef)
			release()
		}
	}
	return o, 0, nil
}

// failed answers an engine error with the table's deployed name in it.
func (o *opened) failed(err error) (int, []byte) {
	status, b := wireError(err)
	return status, renameResponse(b, o.phys, o.logical)
}

// writeFailed answers a single-item write that failed. A failed condition
// asked for ReturnValuesOnConditionCheckFailure=ALL_OLD carries the item
// as it stands, as DynamoDB answers (API reference, PutItem, UpdateItem,
// DeleteItem): minidyn leaves it out of PutItem's and DeleteItem's. The
// item is read under its lock, which the write still holds, so it is the
// item the condition was evaluated on.
func (d *dynamoFront) writeFailed(o *opened, err error, rv ddbtypes.ReturnValuesOnConditionCheckFailure) (int, []byte) {
	ccf, ok := errors.AsType[*ddbtypes.ConditionalCheckFailedException](err)
	if !ok || rv != ddbtypes.ReturnValuesOnConditionCheckFailureAllOld {
		return o.failed(err)
	}
	old, gerr := d.engines[o.shard].get(o.phys, o.key)
	if gerr != nil {
		return internalError(gerr)
	}
	return conditionFailed(aws.ToString(ccf.Message), old)
}

// putItem runs PutItem under its item's lock, and answers
// ReturnValues=ALL_OLD with the item the put replaced, or none for a new
// key, as DynamoDB does. With the model on it is metered (capacity.go)
// once the lock is held, before it is applied: billed on the larger of
// the item it replaces and the new one, plus the index writes; a failed
// condition gives the index writes back.
func (d *dynamoFront) putItem(body []byte) (int, []byte) {
	var in server.PutItemInput
	if err := json.Unmarshal(body, &in); err != nil {
		return apiError(http.StatusBadRequest, "SerializationException", err.Error())
	}
	allOld := in.ReturnValues == ddbtypes.ReturnValueAllOld
	in.ReturnValues = ""
	o, status, b := d.open(&in.TableName, in.Item, writeSingle)
	if o == nil {
		return status, b
	}
	defer o.close()
	if d.model && itemSize(in.Item) > maxItemBytes {
		return apiError(http.StatusBadRequest, "ValidationException", "Item size has exceeded the maximum allowed size")
	}
	var old item
	if allOld || d.model {
		var err error
		if old, err = d.engines[o.shard].get(o.phys, o.key); err != nil {
			return internalError(err)
		}
	}
	cs := d.writeCharges(o.logical, o.key, old, in.Item, 1)
	if which := d.meterTake(cs); which != nil {
		return throttleError(cs, which)
	}
	if _, err := d.client(o.shard).PutItem(context.Background(), &in); err != nil {
		d.unapplied(err, cs)
		return d.writeFailed(o, err, in.ReturnValuesOnConditionCheckFailure)
	}
	if !allOld {
		old = nil
	}
	status, out := encodeOK(server.PutItemOutput{Attributes: old})
	return withConsumed(status, out, cs, string(in.ReturnConsumedCapacity), false)
}

// deleteItem runs DeleteItem under its item's lock, metered like putItem:
// billed on the deleted item's size (1 unit if there is none).
func (d *dynamoFront) deleteItem(body []byte) (int, []byte) {
	var in server.DeleteItemInput
	if err := json.Unmarshal(body, &in); err != nil {
		return apiError(http.StatusBadRequest, "SerializationException", err.Error())
	}
	o, status, b := d.open(&in.TableName, in.Key, writeSingle)
	if o == nil {
		return status, b
	}
	defer o.close()
	var cs []charge
	if d.model {
		old, err := d.engines[o.shard].get(o.phys, o.key)
		if err != nil {
			return internalError(err)
		}
		cs = d.writeCharges(o.logical, o.key, old, nil, 1)
		if which := d.meterTake(cs); which != nil {
			return throttleError(cs, which)
		}
	}
	out, err := d.client(o.shard).DeleteItem(context.Background(), &in)
	if err != nil {
		d.unapplied(err, cs)
		return d.writeFailed(o, err, in.ReturnValuesOnConditionCheckFailure)
	}
	status, answer := encodeOK(out)
	return withConsumed(status, answer, cs, string(in.ReturnConsumedCapacity), false)
}

// getItem runs GetItem under its item's lock (shared). With the model on
// it is metered once read: the whole item's size, whatever the projection
// returns, 4 KB a unit, half for an eventually consistent read; a
// throttled read answers nothing.
func (d *dynamoFront) getItem(body []byte) (int, []byte) {
	var in server.GetItemInput
	if err := json.Unmarshal(body, &in); err != nil {
		return apiError(http.StatusBadRequest, "SerializationException", err.Error())
	}
	o, status, b := d.open(&in.TableName, in.Key, readWait)
	if o == nil {
		return status, b
	}
	defer o.close()
	out, err := d.client(o.shard).GetItem(context.Background(), &in)
	if err != nil {
		return o.failed(err)
	}
	var cs []charge
	if d.model {
		full := out.Item
		if in.ProjectionExpression != nil || len(in.AttributesToGet) > 0 {
			if full, err = d.engines[o.shard].get(o.phys, o.key); err != nil {
				return internalError(err)
			}
		}
		ti, _ := d.info(o.logical)
		cs = []charge{tableRead(o.logical, ti, o.key, itemSize(full), aws.ToBool(in.ConsistentRead), 1)}
		if which := d.meterTake(cs); which != nil {
			return throttleError(cs, which)
		}
	}
	status, answer := encodeOK(out)
	return withConsumed(status, answer, cs, string(in.ReturnConsumedCapacity), false)
}

// updateItem runs UpdateItem under its item's lock. With the model on, an
// update that carries the item past DynamoDB's 400 KB is undone and
// refused with ValidationException, as DynamoDB refuses it; and it is
// metered once applied, when the item after it is known: billed on the
// larger of the item before and after, plus the index writes. A throttled
// update is undone (under the lock, so no GetItem sees it) and answered
// ProvisionedThroughputExceededException; a failed condition is billed on
// the item as it stands.
func (d *dynamoFront) updateItem(body []byte) (int, []byte) {
	var in server.UpdateItemInput
	if err := json.Unmarshal(body, &in); err != nil {
		return apiError(http.StatusBadRequest, "SerializationException", err.Error())
	}
	o, status, b := d.open(&in.TableName, in.Key, writeSingle)
	if o == nil {
		return status, b
	}
	defer o.close()
	logical, phys, shard, key := o.logical, o.phys, o.shard, o.key
	var old item
	if d.model {
		var err error
		if old, err = d.engines[shard].get(phys, key); err != nil {
			return internalError(err)
		}
	}
	out, err := d.client(shard).UpdateItem(context.Background(), &in)
	if err != nil {
		if _, ok := errors.AsType[*ddbtypes.ConditionalCheckFailedException](err); ok && d.model {
			cs := d.writeCharges(logical, key, old, old, 1)
			cs = cs[:min(1, len(cs))]
			if which := d.meterTake(cs); which != nil {
				return throttleError(cs, which)
			}
		}
		return d.writeFailed(o, err, in.ReturnValuesOnConditionCheckFailure)
	}
	if !d.model {
		return encodeOK(out)
	}
	now, err := d.engines[shard].get(phys, key)
	if err != nil {
		return internalError(err)
	}
	if itemSize(now) > maxItemBytes {
		d.restoreItem(shard, phys, key, old)
		return apiError(http.StatusBadRequest, "ValidationException", "Item size to update has exceeded the maximum allowed size")
	}
	cs := d.writeCharges(logical, key, old, now, 1)
	if which := d.meterTake(cs); which != nil {
		d.restoreItem(shard, phys, key, old)
		return throttleError(cs, which)
	}
	status, answer := encodeOK(out)
	return withConsumed(status, answer, cs, string(in.ReturnConsumedCapacity), false)
}

// writeCharges are the charges of a write of one item from old to now
// (nil: absent) with the model on: the table's write, times mult, then
// its index writes. With the model off there are none.
func (d *dynamoFront) writeCharges(table string, key, old, now item, mult float64) []charge {
	if !d.model {
		return nil
	}
	ti, err := d.info(table)
	if err != nil {
		return nil
	}
	return append([]charge{tableWrite(table, ti, key, old, now, mult)}, indexWrites(table, ti, old, now)...)
}

// unapplied gives back what a metered single-item write took when it
// failed: a failed condition still consumed the table's write (developer
// guide, "Condition expressions": a failed conditional write consumes
// write capacity) but wrote no index; any other error consumed nothing.
func (d *dynamoFront) unapplied(err error, cs []charge) {
	if len(cs) == 0 {
		return
	}
	if _, ok := errors.AsType[*ddbtypes.ConditionalCheckFailedException](err); ok {
		cs = cs[1:]
	}
	d.meter.refund(cs)
}
