package localaws_test

import (
	"context"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/dev/localaws"
)

type ctxKey struct{}

func TestTapSeesEachCallUntilStopped(t *testing.T) {
	env := localaws.StartForTest(t)
	ctx := context.WithValue(context.Background(), ctxKey{}, "caller")
	get := func() {
		t.Helper()
		_, err := env.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(env.TableName("IntakeTable")),
			Key: map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "tap#1"}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var seen []localaws.Call
	stop := env.Calls.Tap(func(c localaws.Call) {
		mu.Lock()
		seen = append(seen, c)
		mu.Unlock()
	})
	get()
	stop()
	get()

	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 {
		t.Fatalf("tap saw %d calls, want the 1 made before stop", len(seen))
	}
	c := seen[0]
	in, ok := c.Input.(*dynamodb.GetItemInput)
	if c.Service != "DynamoDB" || c.Operation != "GetItem" || !ok || c.Context.Value(ctxKey{}) != "caller" {
		t.Fatalf("call = %s.%s %T, context value %v", c.Service, c.Operation, c.Input, c.Context.Value(ctxKey{}))
	}
	if aws.ToString(in.TableName) != env.TableName("IntakeTable") {
		t.Fatalf("table %q", aws.ToString(in.TableName))
	}
}
