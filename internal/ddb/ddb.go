package ddb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// API is the part of the DynamoDB client the stores use: the SDK's
// *dynamodb.Client, the local harness's, or a test's wrapper of either.
type API interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

var _ API = (*dynamodb.Client)(nil)

// Key is the key of an item in a table whose string keys are pk and sk.
func Key(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: pk},
		"sk": &types.AttributeValueMemberS{Value: sk},
	}
}

// StampLayout formats times stored as strings: UTC with a fixed-width
// fraction, so that the strings sort as the times do.
const StampLayout = "2006-01-02T15:04:05.000000000Z"

// Stamp formats t with [StampLayout]; the zero time is "".
func Stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(StampLayout)
}

// ParseStamp reads a [Stamp]; "" or anything unreadable is the zero time.
func ParseStamp(s string) time.Time {
	t, err := time.Parse(StampLayout, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// Get reads one item into a T. found is false when there is no such item.
func Get[T any](ctx context.Context, db API, in *dynamodb.GetItemInput) (item T, found bool, err error) {
	out, err := db.GetItem(ctx, in)
	if err != nil {
		return item, false, err
	}
	if len(out.Item) == 0 {
		return item, false, nil
	}
	if err := attributevalue.UnmarshalMap(out.Item, &item); err != nil {
		return item, false, fmt.Errorf("decode %s item: %w", aws.ToString(in.TableName), err)
	}
	return item, true, nil
}

// Item is an item as the SDK returns it; [QueryEach] hands it over
// undecoded.
type Item = map[string]types.AttributeValue

// KeyQuery is the query of table (or of its index, when index is not "")
// for the items that match kc, in ascending sort-key order when forward.
func KeyQuery(table, index string, kc expression.KeyConditionBuilder, forward bool) (*dynamodb.QueryInput, error) {
	expr, err := expression.NewBuilder().WithKeyCondition(kc).Build()
	if err != nil {
		return nil, err
	}
	in := &dynamodb.QueryInput{
		TableName: aws.String(table), KeyConditionExpression: expr.KeyCondition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
		ScanIndexForward: aws.Bool(forward),
	}
	if index != "" {
		in.IndexName = aws.String(index)
	}
	return in, nil
}

// QueryEach runs a query page by page with the SDK's paginator and calls
// fn with each item decoded into a T (an [Item] is passed as it is), in
// order, until fn returns false or an error, or the items run out. A limit
// on in bounds each page, not the whole query.
func QueryEach[T any](ctx context.Context, db API, in *dynamodb.QueryInput, fn func(T) (more bool, err error)) error {
	for pages := dynamodb.NewQueryPaginator(db, in); pages.HasMorePages(); {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return err
		}
		for _, raw := range page.Items {
			item, err := decode[T](raw)
			if err != nil {
				return fmt.Errorf("decode %s item: %w", aws.ToString(in.TableName), err)
			}
			more, err := fn(item)
			if err != nil || !more {
				return err
			}
		}
	}
	return nil
}

// decode turns raw into a T; an [Item] is raw itself.
func decode[T any](raw Item) (T, error) {
	var item T
	if it, ok := any(&item).(*Item); ok {
		*it = raw
		return item, nil
	}
	err := attributevalue.UnmarshalMap(raw, &item)
	return item, err
}

// ConditionFailed reports whether err is a single write's failed
// condition.
func ConditionFailed(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}
