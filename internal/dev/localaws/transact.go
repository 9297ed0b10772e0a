package localaws

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/truora/minidyn/server"
)

// maxTransactItems is DynamoDB's limit on the items of one transaction.
const maxTransactItems = 100

// txOp is one operation of a transaction, as on the wire.
type txOp struct {
	TableName                           string
	Key                                 item
	Item                                item
	ConditionExpression                 string
	UpdateExpression                    string
	ProjectionExpression                string
	ExpressionAttributeNames            map[string]string
	ExpressionAttributeValues           item
	ReturnValuesOnConditionCheckFailure string
}

// txItem is one prepared operation: its kind, identity, key and the item
// it found.
type txItem struct {
	kind  string // ConditionCheck, Put, Update, Delete
	op    *txOp
	id    itemID
	shard int
	phys  string // the shard's table
	key   item
	old   item
	now   item // the item after the operation (with the model on)
	done  bool // written; undone on cancellation
}

type reason struct {
	Code    string
	Message string `json:",omitempty"`
	Item    item   `json:",omitempty"`
}

// transactWrite runs TransactWriteItems all or nothing, with the locks of
// every item it touches held from the first read to the last write:
//
//  1. It validates the request as DynamoDB does: 1 to 100 items, one
//     operation each, no two operations on one item.
//  2. It locks the items (in stripe order) and reads each one.
//  3. It runs each operation through minidyn's single-item operation with
//     the same condition, condition checks first. A condition check runs as
//     a conditional no-op: a REMOVE of an attribute nobody has on an
//     existing item, a conditional DeleteItem on an absent one.
//  4. At the first failed condition it restores every item it wrote from
//     step 2's reads and answers TransactionCanceledException with a
//     reason per item: ConditionalCheckFailed for the one that failed
//     (with its item if asked), None for the rest.
//
// With the model on (conflict.go), step 2 does not wait: an item held by
// a running transaction cancels this one with TransactionConflict for
// that item, as on DynamoDB, before anything is read or written. A
// GetItem of any of the items waits for the locks, so it sees all of a
// transaction or none of it. Query, Scan and
// BatchGetItem do not lock: like DynamoDB's (read-committed), they may see
// some items of a transaction before others, and here also, during the
// brief restore of a cancelled one, the write that is being undone.
func (d *dynamoFront) transactWrite(body []byte) (int, []byte) {
	var in struct {
		TransactItems []struct {
			ConditionCheck, Put, Update, Delete *txOp
		}
		ReturnConsumedCapacity string
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return apiError(http.StatusBadRequest, "SerializationException", err.Error())
	}
	if n := len(in.TransactItems); n == 0 || n > maxTransactItems {
		return apiError(http.StatusBadRequest, "ValidationException", fmt.Sprintf(
			"1 validation error detected: Value at 'transactItems' failed to satisfy constraint: "+
				"Member must have length less than or equal to %d and greater than or equal to 1 (got %d)", maxTransactItems, n))
	}
	items := make([]*txItem, len(in.TransactItems))
	seen := map[itemID]bool{}
	ids := make([]itemID, 0, len(items))
	for i, ti := range in.TransactItems {
		it := &txItem{}
		count := 0
		for kind, op := range map[string]*txOp{"ConditionCheck": ti.ConditionCheck, "Put": ti.Put, "Update": ti.Update, "Delete": ti.Delete} {
			if op != nil {
				it.kind, it.op = kind, op
				count++
			}
		}
		if count != 1 {
			return apiError(http.StatusBadRequest, "ValidationException",
				"TransactItems can only contain one of Check, Put, Update or Delete")
		}
		attrs := it.op.Key
		if it.kind == "Put" {
			attrs = it.op.Item
		}
		id, shard, key, err := d.locate(it.op.TableName, attrs)
		if err != nil {
			return locateError(err)
		}
		if it.kind == "Put" && d.model && itemSize(it.op.Item) > maxItemBytes {
			return apiError(http.StatusBadRequest, "ValidationException", "Item size has exceeded the maximum allowed size")
		}
		if it.kind == "ConditionCheck" && it.op.ConditionExpression == "" {
			return apiError(http.StatusBadRequest, "ValidationException", "A ConditionCheck needs a ConditionExpression")
		}
		if seen[id] {
			return apiError(http.StatusBadRequest, "ValidationException",
				"Transaction request cannot include multiple operations on one item")
		}
		seen[id] = true
		it.id, it.key, it.shard, it.phys = id, key, shard, physical(it.op.TableName, shard)
		items[i] = it
		ids = append(ids, id)
	}

	release, conflicts := d.locks.acquire(ids, d.mode(txWrite))
	if conflicts != nil {
		return conflictCancel(ids, conflicts)
	}
	defer release()
	refs := make([]itemRef, len(items))
	for i, it := range items {
		refs[i] = itemRef{it.id, it.shard, it.key}
	}
	if err := d.warmAll(refs); err != nil {
		return internalError(err)
	}
	defer d.touch(refs...)
	for _, it := range items {
		old, err := d.engines[it.shard].get(it.phys, it.key)
		if err != nil {
			return internalError(err)
		}
		it.old = old
	}
	if d.model && transactionSize(items) > maxTransactionBytes {
		return apiError(http.StatusBadRequest, "ValidationException",
			"Transaction request cannot be larger than 4 MB")
	}
	failed, tooLarge := -1, false
	for _, pass := range []bool{true, false} { // condition checks first: they write nothing
		for i, it := range items {
			if (it.kind == "ConditionCheck") != pass {
				continue
			}
			err := d.apply(it)
			if err == nil {
				it.done = it.kind != "ConditionCheck"
				if d.model && it.kind == "Update" {
					if it.now, err = d.engines[it.shard].get(it.phys, it.key); err != nil {
						d.undo(items)
						return internalError(err)
					}
				}
				if it.kind == "Update" && itemSize(it.now) > maxItemBytes {
					failed, tooLarge = i, true
					break
				}
				continue
			}
			if _, ok := errors.AsType[*ddbtypes.ConditionalCheckFailedException](err); ok {
				failed = i
				break
			}
			d.undo(items)
			status, out := wireError(err) // a malformed expression and the like: nothing applied
			return status, renameResponse(out, it.phys, it.op.TableName)
		}
		if failed >= 0 {
			break
		}
	}
	if failed < 0 {
		cs := d.transactCharges(items)
		if which := d.meterTake(cs); which != nil {
			d.undo(items)
			return throttleCancel(len(items), cs, which)
		}
		return withConsumed(http.StatusOK, []byte("{}"), cs, in.ReturnConsumedCapacity, true)
	}
	d.undo(items)
	reasons := make([]reason, len(items))
	codes := make([]string, len(items))
	for i, it := range items {
		reasons[i], codes[i] = reason{Code: "None"}, "None"
		if i == failed && tooLarge {
			reasons[i] = reason{Code: "ValidationError", Message: "Item size to update has exceeded the maximum allowed size"}
			codes[i] = "ValidationError"
		} else if i == failed {
			reasons[i] = reason{Code: "ConditionalCheckFailed", Message: "The conditional request failed"}
			codes[i] = "ConditionalCheckFailed"
			if it.op.ReturnValuesOnConditionCheckFailure == "ALL_OLD" {
				reasons[i].Item = it.old
			}
		}
	}
	return cancel(reasons, codes)
}

// cancel answers TransactionCanceledException with a reason per item.
func cancel(reasons []reason, codes []string) (int, []byte) {
	out, _ := json.Marshal(map[string]any{
		"__type": "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
		"Message": "Transaction cancelled, please refer cancellation reasons for specific reasons [" +
			strings.Join(codes, ", ") + "]",
		"CancellationReasons": reasons,
	})
	return http.StatusBadRequest, out
}

// transactCharges are the charges of a transaction that applied, with the
// model on (developer guide, "Capacity management for transactions",
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html#transaction-capacity-handling):
// each Put, Update and Delete is a write billed twice on the larger of
// its item before and after, plus its index writes; each ConditionCheck a
// transactional read (twice a strongly consistent one) of its item.
func (d *dynamoFront) transactCharges(items []*txItem) []charge {
	if !d.model {
		return nil
	}
	var cs []charge
	for i, it := range items {
		ti, err := d.info(it.op.TableName)
		if err != nil {
			continue
		}
		var mine []charge
		switch it.kind {
		case "ConditionCheck":
			mine = []charge{tableRead(it.op.TableName, ti, it.key, itemSize(it.old), true, transactional)}
		case "Put":
			mine = d.writeCharges(it.op.TableName, it.key, it.old, it.op.Item, transactional)
		case "Update":
			mine = d.writeCharges(it.op.TableName, it.key, it.old, it.now, transactional)
		default:
			mine = d.writeCharges(it.op.TableName, it.key, it.old, nil, transactional)
		}
		for _, c := range mine {
			c.owner = i
			cs = append(cs, c)
		}
	}
	return cs
}

// conflictCancel cancels a transaction that met items held by a running
// one: TransactionConflict for those, None for the rest, as DynamoDB
// answers. Nothing was read or written.
func conflictCancel(ids []itemID, conflicts map[itemID]bool) (int, []byte) {
	reasons := make([]reason, len(ids))
	codes := make([]string, len(ids))
	for i, id := range ids {
		reasons[i], codes[i] = reason{Code: "None"}, "None"
		if conflicts[id] {
			reasons[i] = reason{Code: "TransactionConflict", Message: "Transaction is ongoing for the item"}
			codes[i] = "TransactionConflict"
		}
	}
	return cancel(reasons, codes)
}

// probeName is an attribute no item has: REMOVE of it changes nothing.
const probeName = "hookline_txn_probe"

// apply runs one transaction operation as a single-item operation with
// its condition.
func (d *dynamoFront) apply(it *txItem) error {
	op, ctx, table := it.op, context.Background(), aws.String(it.phys)
	cond := optional(op.ConditionExpression)
	var err error
	switch it.kind {
	case "Put":
		_, err = d.client(it.shard).PutItem(ctx, &server.PutItemInput{TableName: table, Item: op.Item, ConditionExpression: cond,
			ExpressionAttributeNames: op.ExpressionAttributeNames, ExpressionAttributeValues: op.ExpressionAttributeValues})
	case "Update":
		_, err = d.client(it.shard).UpdateItem(ctx, &server.UpdateItemInput{TableName: table, Key: op.Key, ConditionExpression: cond,
			UpdateExpression: optional(op.UpdateExpression), ExpressionAttributeNames: op.ExpressionAttributeNames,
			ExpressionAttributeValues: op.ExpressionAttributeValues})
	case "Delete":
		_, err = d.client(it.shard).DeleteItem(ctx, &server.DeleteItemInput{TableName: table, Key: op.Key, ConditionExpression: cond,
			ExpressionAttributeNames: op.ExpressionAttributeNames, ExpressionAttributeValues: op.ExpressionAttributeValues})
	default:
		err = d.check(it)
	}
	return err
}

// check evaluates a ConditionCheck's condition and changes nothing: on an
// absent item, as a conditional delete; on a present one, as a
// conditional REMOVE of an attribute no item has.
func (d *dynamoFront) check(it *txItem) error {
	op, ctx, table := it.op, context.Background(), aws.String(it.phys)
	cond := optional(op.ConditionExpression)
	if it.old == nil {
		_, err := d.client(it.shard).DeleteItem(ctx, &server.DeleteItemInput{TableName: table, Key: it.key, ConditionExpression: cond,
			ExpressionAttributeNames: op.ExpressionAttributeNames, ExpressionAttributeValues: op.ExpressionAttributeValues})
		return err
	}
	names := map[string]string{"#hooklineProbe": probeName}
	for k, v := range op.ExpressionAttributeNames {
		names[k] = v
	}
	_, err := d.client(it.shard).UpdateItem(ctx, &server.UpdateItemInput{TableName: table, Key: it.key, ConditionExpression: cond,
		UpdateExpression: aws.String("REMOVE #hooklineProbe"), ExpressionAttributeNames: names,
		ExpressionAttributeValues: op.ExpressionAttributeValues})
	return err
}

// optional is nil for an empty expression, as when it is left out.
func optional(expr string) *string {
	if expr == "" {
		return nil
	}
	return aws.String(expr)
}

// undo restores every item the transaction wrote, from its reads.
func (d *dynamoFront) undo(items []*txItem) {
	for i := len(items) - 1; i >= 0; i-- {
		it := items[i]
		if !it.done {
			continue
		}
		d.restoreItem(it.shard, it.phys, it.key, it.old)
		it.done = false
	}
}

// restoreItem puts back an item as it was read (nil: absent).
func (d *dynamoFront) restoreItem(shard int, phys string, key, old item) {
	ctx := context.Background()
	if old == nil {
		d.client(shard).DeleteItem(ctx, &server.DeleteItemInput{TableName: aws.String(phys), Key: key})
		return
	}
	d.client(shard).PutItem(ctx, &server.PutItemInput{TableName: aws.String(phys), Item: old})
}

// transactionSize is the aggregate size of a transaction's items, which
// DynamoDB caps at 4 MB: each Put's new item, and the item as read for
// every other operation.
func transactionSize(items []*txItem) int {
	n := 0
	for _, it := range items {
		if it.kind == "Put" {
			n += itemSize(it.op.Item)
		} else {
			n += itemSize(it.old)
		}
	}
	return n
}

// transactGet runs TransactGetItems with every item's lock held (shared),
// so it reads all of a concurrent transaction or none of it. With the
// model on, an item held by a running write cancels it
// (TransactionConflict), as on DynamoDB.
func (d *dynamoFront) transactGet(body []byte) (int, []byte) {
	var in struct {
		TransactItems          []struct{ Get *txOp }
		ReturnConsumedCapacity string
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return apiError(http.StatusBadRequest, "SerializationException", err.Error())
	}
	if n := len(in.TransactItems); n == 0 || n > maxTransactItems {
		return apiError(http.StatusBadRequest, "ValidationException", fmt.Sprintf(
			"Member must have length less than or equal to %d and greater than or equal to 1 (got %d)", maxTransactItems, n))
	}
	ids := make([]itemID, len(in.TransactItems))
	phys := make([]string, len(in.TransactItems))
	shards := make([]int, len(in.TransactItems))
	refs := make([]itemRef, len(in.TransactItems))
	seen := map[itemID]bool{}
	for i, ti := range in.TransactItems {
		if ti.Get == nil {
			return apiError(http.StatusBadRequest, "ValidationException", "TransactGetItems can only contain Get")
		}
		id, shard, key, err := d.locate(ti.Get.TableName, ti.Get.Key)
		if err != nil {
			return locateError(err)
		}
		phys[i], shards[i] = physical(ti.Get.TableName, shard), shard
		refs[i] = itemRef{id, shard, key}
		if seen[id] {
			return apiError(http.StatusBadRequest, "ValidationException",
				"Transaction request cannot include multiple operations on one item")
		}
		seen[id], ids[i] = true, id
	}
	release, conflicts := d.locks.acquire(ids, d.mode(txRead))
	if conflicts != nil {
		return conflictCancel(ids, conflicts)
	}
	defer release()
	if err := d.warmAll(refs); err != nil {
		return internalError(err)
	}
	responses := make([]server.ItemResponse, len(in.TransactItems))
	var cs []charge
	for i, ti := range in.TransactItems {
		get := &server.GetItemInput{TableName: aws.String(phys[i]), Key: ti.Get.Key, ConsistentRead: aws.Bool(true)}
		if ti.Get.ProjectionExpression != "" {
			get.ProjectionExpression = aws.String(ti.Get.ProjectionExpression)
			get.ExpressionAttributeNames = ti.Get.ExpressionAttributeNames
		}
		out, err := d.client(shards[i]).GetItem(context.Background(), get)
		if err != nil {
			status, b := wireError(err)
			return status, renameResponse(b, phys[i], ti.Get.TableName)
		}
		responses[i].Item = out.Item
		if d.model {
			full := out.Item
			if get.ProjectionExpression != nil {
				if full, err = d.engines[shards[i]].get(phys[i], refs[i].key); err != nil {
					return internalError(err)
				}
			}
			info, _ := d.info(ti.Get.TableName)
			c := tableRead(ti.Get.TableName, info, refs[i].key, itemSize(full), true, transactional)
			c.owner = i
			cs = append(cs, c)
		}
	}
	if which := d.meterTake(cs); which != nil {
		return throttleCancel(len(responses), cs, which)
	}
	status, out := encodeOK(server.TransactGetItemsOutput{Responses: responses})
	return withConsumed(status, out, cs, in.ReturnConsumedCapacity, true)
}
