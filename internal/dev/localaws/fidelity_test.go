package localaws_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/dev/localaws"
)

// TestConditionCheckFailureReturnsTheItem: with
// ReturnValuesOnConditionCheckFailure=ALL_OLD, a PutItem, UpdateItem or
// DeleteItem whose condition fails returns the item as it stands in the
// ConditionalCheckFailedException, and a transaction's cancellation
// reason carries it too; with NONE, or when there is no item, nothing is
// returned. API reference, PutItem, ReturnValuesOnConditionCheckFailure
// (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_PutItem.html#DDB-PutItem-request-ReturnValuesOnConditionCheckFailure):
// "Use ReturnValuesOnConditionCheckFailure to get the item attributes if
// the PutItem operation failed a condition check"; UpdateItem, DeleteItem
// and TransactWriteItems' CancellationReason.Item say the same.
func TestConditionCheckFailureReturnsTheItem(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts localaws.Options
	}{
		{"the model on", localaws.Options{}},
		{"the model off", localaws.Options{NoModel: true}},
		{"the item spilled", localaws.Options{HotItems: 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env := startWith(t, tt.opts)
			ctx := context.Background()
			table := aws.String(env.TableName("IdempotencyTable"))
			stored := map[string]ddbtypes.AttributeValue{"pk": str("k"), "v": str("first")}
			if _, err := env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: table, Item: stored}); err != nil {
				t.Fatal(err)
			}
			if _, err := env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: table,
				Item: map[string]ddbtypes.AttributeValue{"pk": str("other")}}); err != nil {
				t.Fatal(err) // with one hot item, k is spilled now
			}
			key := map[string]ddbtypes.AttributeValue{"pk": str("k")}
			absent := map[string]ddbtypes.AttributeValue{"pk": str("absent")}
			wrong := map[string]ddbtypes.AttributeValue{":x": str("not it")}
			allOld, none := ddbtypes.ReturnValuesOnConditionCheckFailureAllOld, ddbtypes.ReturnValuesOnConditionCheckFailureNone
			put := func(rv ddbtypes.ReturnValuesOnConditionCheckFailure) error {
				_, err := env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: table,
					Item:                                map[string]ddbtypes.AttributeValue{"pk": str("k"), "v": str("second")},
					ConditionExpression:                 aws.String("attribute_not_exists(pk)"),
					ReturnValuesOnConditionCheckFailure: rv})
				return err
			}
			update := func(k map[string]ddbtypes.AttributeValue) func(ddbtypes.ReturnValuesOnConditionCheckFailure) error {
				return func(rv ddbtypes.ReturnValuesOnConditionCheckFailure) error {
					_, err := env.DynamoDB.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: table, Key: k,
						UpdateExpression: aws.String("SET v = :x"), ConditionExpression: aws.String("v = :x"),
						ExpressionAttributeValues: wrong, ReturnValuesOnConditionCheckFailure: rv})
					return err
				}
			}
			del := func(k map[string]ddbtypes.AttributeValue) func(ddbtypes.ReturnValuesOnConditionCheckFailure) error {
				return func(rv ddbtypes.ReturnValuesOnConditionCheckFailure) error {
					_, err := env.DynamoDB.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: table, Key: k,
						ConditionExpression: aws.String("v = :x"), ExpressionAttributeValues: wrong, ReturnValuesOnConditionCheckFailure: rv})
					return err
				}
			}
			for _, c := range []struct {
				name string
				call func(ddbtypes.ReturnValuesOnConditionCheckFailure) error
				rv   ddbtypes.ReturnValuesOnConditionCheckFailure
				want map[string]ddbtypes.AttributeValue
			}{
				{"PutItem, ALL_OLD", put, allOld, stored},
				{"PutItem, NONE", put, none, nil},
				{"PutItem, not asked", put, "", nil},
				{"UpdateItem, ALL_OLD", update(key), allOld, stored},
				{"UpdateItem, NONE", update(key), none, nil},
				{"UpdateItem of no item, ALL_OLD", update(absent), allOld, nil},
				{"DeleteItem, ALL_OLD", del(key), allOld, stored},
				{"DeleteItem, NONE", del(key), none, nil},
				{"DeleteItem of no item, ALL_OLD", del(absent), allOld, nil},
			} {
				ccf, ok := errors.AsType[*ddbtypes.ConditionalCheckFailedException](c.call(c.rv))
				if !ok {
					t.Fatalf("%s: want ConditionalCheckFailedException", c.name)
				}
				if !sameItem(ccf.Item, c.want) {
					t.Errorf("%s: the failure carries %s; want %s", c.name, show(ccf.Item), show(c.want))
				}
			}

			_, err := env.DynamoDB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
				{Put: &ddbtypes.Put{TableName: table, Item: map[string]ddbtypes.AttributeValue{"pk": str("new")}}},
				{Put: &ddbtypes.Put{TableName: table, Item: map[string]ddbtypes.AttributeValue{"pk": str("k")},
					ConditionExpression: aws.String("attribute_not_exists(pk)"), ReturnValuesOnConditionCheckFailure: allOld}},
			}})
			tce, ok := errors.AsType[*ddbtypes.TransactionCanceledException](err)
			if !ok || len(tce.CancellationReasons) != 2 {
				t.Fatalf("transaction: %v; want it cancelled with two reasons", err)
			}
			if r := tce.CancellationReasons[1]; aws.ToString(r.Code) != "ConditionalCheckFailed" || !sameItem(r.Item, stored) {
				t.Errorf("transaction: reason %s with %s; want ConditionalCheckFailed with %s", aws.ToString(r.Code), show(r.Item), show(stored))
			}
			got, err := env.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: table, Key: key, ConsistentRead: aws.Bool(true)})
			if err != nil || !sameItem(got.Item, stored) {
				t.Fatalf("after the failed writes: %s, %v; want the item unchanged", show(got.Item), err)
			}
		})
	}
}

// startWith starts local AWS with opts for one test; against an external
// endpoint it skips, since opts configure the embedded emulators.
func startWith(t *testing.T, opts localaws.Options) *localaws.Env {
	t.Helper()
	if localaws.External() {
		t.Skip("the options configure the embedded emulators, and an external AWS endpoint is set")
	}
	env, err := localaws.Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close() })
	return env
}

// sameItem reports whether two items hold the same string attributes
// (nil and empty are the same: no item).
func sameItem(a, b map[string]ddbtypes.AttributeValue) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		x, ok1 := v.(*ddbtypes.AttributeValueMemberS)
		y, ok2 := b[k].(*ddbtypes.AttributeValueMemberS)
		if !ok1 || !ok2 || x.Value != y.Value {
			return false
		}
	}
	return true
}

// show writes an item of string attributes as {k: v, ...}, in key order.
func show(it map[string]ddbtypes.AttributeValue) string {
	if len(it) == 0 {
		return "no item"
	}
	var parts []string
	for k, v := range it {
		s, _ := v.(*ddbtypes.AttributeValueMemberS)
		if s == nil {
			s = &ddbtypes.AttributeValueMemberS{Value: fmt.Sprintf("%T", v)}
		}
		parts = append(parts, k+": "+s.Value)
	}
	slices.Sort(parts)
	return "{" + strings.Join(parts, ", ") + "}"
}
