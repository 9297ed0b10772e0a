package testkit

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Conflict is the error DynamoDB answers for a transaction of n items that
// met a running transaction on item pos: a TransactionCanceledException
// whose reason is TransactionConflict for pos and None for the rest.
// Tests wrap the local DynamoDB with it to drive a retry path at will.
func Conflict(n, pos int) error {
	reasons := make([]types.CancellationReason, n)
	for i := range reasons {
		reasons[i].Code = aws.String("None")
	}
	reasons[pos].Code = aws.String("TransactionConflict")
	return &types.TransactionCanceledException{Message: aws.String("Transaction cancelled [TransactionConflict]"),
		CancellationReasons: reasons}
}
