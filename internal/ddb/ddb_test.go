package ddb_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/ddb"
	"github.com/hookline/hookline/internal/dev/localaws"
)

type row struct {
	PK string `dynamodbav:"pk"`
	SK string `dynamodbav:"sk"`
	N  int    `dynamodbav:"n"`
}

func TestStampSortsAsTimeDoes(t *testing.T) {
	a := time.Date(2026, 11, 30, 9, 59, 59, 999_999_999, time.FixedZone("x", 3600))
	b := a.Add(time.Nanosecond)
	if !(ddb.Stamp(a) < ddb.Stamp(b)) || !ddb.ParseStamp(ddb.Stamp(a)).Equal(a) {
		t.Fatalf("%s, %s", ddb.Stamp(a), ddb.Stamp(b))
	}
	if ddb.Stamp(time.Time{}) != "" || !ddb.ParseStamp("").IsZero() || !ddb.ParseStamp("garbage").IsZero() {
		t.Fatal("the zero time is not the empty stamp")
	}
}

func TestGetQueryEachAndConditionFailed(t *testing.T) {
	ctx := context.Background()
	env := localaws.StartForTest(t)
	table := env.TableName("LedgerTable")
	for i := range 5 {
		_, err := env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: "T#ddb"}, "sk": &types.AttributeValueMemberS{Value: fmt.Sprintf("S#%d", i)},
			"n": &types.AttributeValueMemberN{Value: fmt.Sprint(i)},
		}})
		if err != nil {
			t.Fatal(err)
		}
	}
	got, found, err := ddb.Get[row](ctx, env.DynamoDB, &dynamodb.GetItemInput{TableName: aws.String(table), Key: ddb.Key("T#ddb", "S#3")})
	if err != nil || !found || got.N != 3 {
		t.Fatalf("get: %+v %v %v", got, found, err)
	}
	if _, found, err := ddb.Get[row](ctx, env.DynamoDB, &dynamodb.GetItemInput{TableName: aws.String(table), Key: ddb.Key("T#ddb", "S#9")}); found || err != nil {
		t.Fatalf("get of a missing item: %v %v", found, err)
	}
	expr, err := expression.NewBuilder().WithKeyCondition(expression.Key("pk").Equal(expression.Value("T#ddb"))).Build()
	if err != nil {
		t.Fatal(err)
	}
	in := &dynamodb.QueryInput{TableName: aws.String(table), KeyConditionExpression: expr.KeyCondition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(), Limit: aws.Int32(2)}
	var seen []int
	err = ddb.QueryEach(ctx, env.DynamoDB, in, func(r row) (bool, error) { seen = append(seen, r.N); return r.N < 3, nil })
	if err != nil || fmt.Sprint(seen) != "[0 1 2 3]" {
		t.Fatalf("query over pages of 2, stopping after 3: %v %v", seen, err)
	}
	in, err = ddb.KeyQuery(table, "", expression.Key("pk").Equal(expression.Value("T#ddb")), false)
	if err != nil {
		t.Fatal(err)
	}
	var sks []string
	err = ddb.QueryEach(ctx, env.DynamoDB, in, func(it ddb.Item) (bool, error) {
		sks = append(sks, it["sk"].(*types.AttributeValueMemberS).Value)
		return true, nil
	})
	if err != nil || fmt.Sprint(sks) != "[S#4 S#3 S#2 S#1 S#0]" {
		t.Fatalf("raw items, newest first: %v %v", sks, err)
	}
	cond, err := expression.NewBuilder().WithCondition(expression.AttributeNotExists(expression.Name("pk"))).Build()
	if err != nil {
		t.Fatal(err)
	}
	_, err = env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: ddb.Key("T#ddb", "S#0"),
		ConditionExpression: cond.Condition(), ExpressionAttributeNames: cond.Names()})
	if !ddb.ConditionFailed(err) || ddb.ConditionFailed(fmt.Errorf("other")) {
		t.Fatalf("a failed condition not recognised: %v", err)
	}
}
