package localaws

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TestExpiryLeavesAnItemInUseForTheNextSweep: a sweep never waits for an
// item's lock; an expired item that an operation holds is deleted by the
// sweep after it is free, and the others at once (one here with a NUL
// byte in its key, which the sweep reads back from the item's identity).
func TestExpiryLeavesAnItemInUseForTheNextSweep(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	env, front := startEmbedded(t, Options{ExpireItems: true, Now: func() time.Time { return now }})
	table := env.TableName("IdempotencyTable")
	for _, pk := range []string{"held", "nul\x00key"} {
		if _, err := env.DynamoDB.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table),
			Item: map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: pk},
				"expires_at": &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(now.Unix()-1, 10)}}}); err != nil {
			t.Fatal(err)
		}
	}
	id, _, _, err := front.locate(table, item{"pk": &av{S: aws.String("held")}})
	if err != nil {
		t.Fatal(err)
	}
	release, ok := front.locks.tryExclusive(id)
	if !ok {
		t.Fatal("the item is held already")
	}
	if n := env.ExpireItemsNow(); n != 1 {
		t.Fatalf("a sweep deleted %d items while one of the two expired was held; want the other", n)
	}
	release()
	if n := env.ExpireItemsNow(); n != 1 {
		t.Fatalf("the next sweep deleted %d items; want the one that was held", n)
	}
	if n := env.ExpireItemsNow(); n != 0 || env.ItemsExpired() != 2 {
		t.Fatalf("a third sweep deleted %d, %d in all; want none more", n, env.ItemsExpired())
	}
}
