package localaws_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/dev/localaws"
)

// TestClientRequestTokenMakesARetryIdempotent reproduces TransactWriteItems
// idempotency as the developer guide's "Amazon DynamoDB Transactions: How
// it works" describes it
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html#transaction-apis-txwriteitems):
// a call repeated with the client token of a successful one, within 10
// minutes, returns success without making any change; the same token with
// other parameters is refused with IdempotentParameterMismatchException.
func TestClientRequestTokenMakesARetryIdempotent(t *testing.T) {
	// Given an account and a transaction that adds 1 to it, with a token
	env := localaws.StartForTest(t)
	ctx := context.Background()
	table := env.TableName("LedgerTable")
	putAcct(t, env, table, "tok", 0)
	add := func(token string, delta int64) error {
		_, err := env.DynamoDB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
			ClientRequestToken: aws.String(token),
			TransactItems:      []ddbtypes.TransactWriteItem{{Update: addTo(table, "tok", delta)}},
		})
		return err
	}
	if err := add("token-1", 1); err != nil {
		t.Fatal(err)
	}

	// When it is sent again with the same token, as the SDK's retryer
	// does after an answer it did not get
	if err := add("token-1", 1); err != nil {
		t.Fatalf("retry with the same token: %v, want success", err)
	}

	// Then it succeeded without applying twice
	if a, _ := getAcct(t, env, table, "tok"); a.Bal != 1 {
		t.Fatalf("balance %d after a retried transaction, want 1", a.Bal)
	}
	// and the same token with other parameters is refused, and applies nothing
	if code := errorCode(add("token-1", 5)); code != "IdempotentParameterMismatchException" {
		t.Fatalf("same token, other parameters: code %q, want IdempotentParameterMismatchException", code)
	}
	// and another token applies again
	if err := add("token-2", 1); err != nil {
		t.Fatal(err)
	}
	if a, _ := getAcct(t, env, table, "tok"); a.Bal != 2 {
		t.Fatalf("balance %d, want 2", a.Bal)
	}
}

// TestCancelledTransactionTokenRunsAgain: only a successful call's token
// answers for it; a cancelled transaction sent again is run again.
func TestCancelledTransactionTokenRunsAgain(t *testing.T) {
	env := localaws.StartForTest(t)
	ctx := context.Background()
	table := env.TableName("LedgerTable")
	in := &dynamodb.TransactWriteItemsInput{ClientRequestToken: aws.String("token-c"),
		TransactItems: []ddbtypes.TransactWriteItem{{Update: casUpdate(table, "later", 0, 1)}}}
	// Given a transaction cancelled by its condition (no item yet)
	if code := errorCode(func() error { _, err := env.DynamoDB.TransactWriteItems(ctx, in); return err }()); code != "TransactionCanceledException" {
		t.Fatalf("first call: code %q, want TransactionCanceledException", code)
	}
	// When the item appears and the same call is sent again
	putAcct(t, env, table, "later", 0)
	if _, err := env.DynamoDB.TransactWriteItems(ctx, in); err != nil {
		t.Fatalf("second call: %v", err)
	}
	// Then it ran
	if a, _ := getAcct(t, env, table, "later"); a.Bal != 1 || a.Ver != 1 {
		t.Fatalf("later = %+v, want balance 1 version 1", a)
	}
}
