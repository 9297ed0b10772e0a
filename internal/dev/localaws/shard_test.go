package localaws_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/dev/localaws"
)

type indexed struct {
	PK     string `dynamodbav:"pk"`
	SK     string `dynamodbav:"sk"`
	GSI1PK string `dynamodbav:"gsi1pk"`
	GSI1SK string `dynamodbav:"gsi1sk"`
	N      int    `dynamodbav:"n"`
}

// TestQueriesAndScansSeeEveryItemOnceInOrder pages through an index query,
// a table query and a scan with small limits, as the SDK's paginators do,
// over items spread across many partitions.
func TestQueriesAndScansSeeEveryItemOnceInOrder(t *testing.T) {
	env := localaws.StartForTest(t)
	ctx := context.Background()
	table := env.TableName("LedgerTable")
	const n = 300
	for i := range n {
		item, _ := attributevalue.MarshalMap(indexed{PK: fmt.Sprintf("p%d", i), SK: "X", GSI1PK: "G", GSI1SK: fmt.Sprintf("%05d", (i*7)%n), N: i})
		if _, err := env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
			t.Fatal(err)
		}
		item, _ = attributevalue.MarshalMap(indexed{PK: "one", SK: fmt.Sprintf("%05d", i), GSI1PK: "H", GSI1SK: "x", N: i})
		if _, err := env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	query := func(t *testing.T, index, pk, pkName string, forward bool, limit int32) []indexed {
		t.Helper()
		kc, _ := expression.NewBuilder().WithKeyCondition(expression.Key(pkName).Equal(expression.Value(pk))).Build()
		in := &dynamodb.QueryInput{TableName: aws.String(table), KeyConditionExpression: kc.KeyCondition(),
			ExpressionAttributeNames: kc.Names(), ExpressionAttributeValues: kc.Values(),
			ScanIndexForward: aws.Bool(forward), Limit: aws.Int32(limit)}
		if index != "" {
			in.IndexName = aws.String(index)
		}
		var out []indexed
		p := dynamodb.NewQueryPaginator(env.DynamoDB, in)
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Items) > int(limit) {
				t.Fatalf("page of %d items over Limit %d", len(page.Items), limit)
			}
			var items []indexed
			attributevalue.UnmarshalListOfMaps(page.Items, &items)
			out = append(out, items...)
		}
		return out
	}
	t.Run("index query, forward and backward", func(t *testing.T) {
		for _, forward := range []bool{true, false} {
			got := query(t, "gsi1", "G", "gsi1pk", forward, 7)
			if len(got) != n {
				t.Fatalf("forward=%v: %d items, want %d", forward, len(got), n)
			}
			for i, it := range got {
				want := i
				if !forward {
					want = n - 1 - i
				}
				if it.GSI1SK != fmt.Sprintf("%05d", want) {
					t.Fatalf("forward=%v: item %d has gsi1sk %s, want %05d", forward, i, it.GSI1SK, want)
				}
			}
		}
	})
	t.Run("table query on one partition", func(t *testing.T) {
		got := query(t, "", "one", "pk", false, 11)
		if len(got) != n || got[0].SK != fmt.Sprintf("%05d", n-1) || got[n-1].SK != "00000" {
			t.Fatalf("%d items, first %+v", len(got), got[0])
		}
	})
	t.Run("scan", func(t *testing.T) {
		seen := map[string]int{}
		p := dynamodb.NewScanPaginator(env.DynamoDB, &dynamodb.ScanInput{TableName: aws.String(table), Limit: aws.Int32(13)})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range page.Items {
				var x indexed
				attributevalue.UnmarshalMap(it, &x)
				seen[x.PK+"/"+x.SK]++
			}
		}
		if len(seen) != 2*n {
			t.Fatalf("scan saw %d distinct items, want %d", len(seen), 2*n)
		}
		for k, c := range seen {
			if c != 1 {
				t.Fatalf("scan saw %s %d times", k, c)
			}
		}
	})
	t.Run("batch get across partitions", func(t *testing.T) {
		var keys []map[string]ddbtypes.AttributeValue
		for i := range 50 {
			keys = append(keys, map[string]ddbtypes.AttributeValue{"pk": str(fmt.Sprintf("p%d", i)), "sk": str("X")})
		}
		out, err := env.DynamoDB.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]ddbtypes.KeysAndAttributes{table: {Keys: keys}}})
		if err != nil || len(out.Responses[table]) != 50 {
			t.Fatalf("batch get = %d items, %v", len(out.Responses[table]), err)
		}
	})
}
