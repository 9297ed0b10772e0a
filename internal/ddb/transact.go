package ddb

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ErrContended means a transaction was still cancelled by conflicting
// transactions or throttling after every retry. Nothing of it was applied
// and nothing was decided: it is not a failed condition.
var ErrContended = errors.New("transaction kept meeting conflicts or throttling")

// Cancelled reports, for a cancelled transaction, which items failed their
// condition, and whether any item was cancelled by a conflicting
// transaction or by throttling (which a retry may get past). ok is false
// when err is not a cancellation.
func Cancelled(err error) (failed []bool, retryable bool, ok bool) {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return nil, false, false
	}
	failed = make([]bool, len(tce.CancellationReasons))
	for i, r := range tce.CancellationReasons {
		switch aws.ToString(r.Code) {
		case "ConditionalCheckFailed":
			failed[i] = true
		case "TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded":
			retryable = true
		}
	}
	return failed, retryable, true
}

// Retry is how [Retry.Transact] retries a transaction that DynamoDB
// cancelled for a conflict or throttling: up to Attempts attempts, with
// full-jitter backoff from Base, doubling up to Max.
type Retry struct {
	Attempts  int
	Base, Max time.Duration
}

// Transact runs a TransactWriteItems and retries it while it is cancelled
// only by conflicts or throttling. DynamoDB cancels a transaction that
// meets a running one rather than waiting, so on a busy item the retry is
// what applies it. It returns nil, the error of an attempt that was not
// retryable (a cancellation with a failed condition among them, as
// DynamoDB gave it), or, when the attempts or ctx ran out, an error
// wrapping [ErrContended] that is not a cancellation: a caller that reads
// a cancellation as "another writer got there first" must not read a
// contended one so.
func (r Retry) Transact(ctx context.Context, db API, items []types.TransactWriteItem) error {
	return r.do(ctx, func() (bool, error) {
		_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		failed, retryable, ok := Cancelled(err)
		return err != nil && ok && retryable && !slices.Contains(failed, true), err
	})
}

// Write runs one single-item write and retries it while DynamoDB refuses
// it with TransactionConflictException: the item is held by a running
// transaction, and on a hot item (a workload's total, written by every
// batch) one is nearly always running. The SDK retries such a refusal
// only a few times, within milliseconds. It returns nil, the first error
// that is not a conflict, or, when the attempts or ctx ran out, an error
// wrapping [ErrContended].
func (r Retry) Write(ctx context.Context, write func() error) error {
	return r.do(ctx, func() (bool, error) {
		err := write()
		var conflict *types.TransactionConflictException
		return errors.As(err, &conflict), err
	})
}

// do runs attempt until it says not to retry, at most r.Attempts times,
// with full-jitter backoff between attempts.
func (r Retry) do(ctx context.Context, attempt func() (retry bool, err error)) error {
	wait := r.Base
	for i := 1; ; i++ {
		retry, err := attempt()
		if !retry {
			return err
		}
		if i >= r.Attempts {
			return fmt.Errorf("%w (%d attempts): %v", ErrContended, i, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (%d attempts): %w: %v", ErrContended, i, ctx.Err(), err)
		case <-time.After(rand.N(wait) + time.Millisecond):
		}
		wait = min(2*wait, r.Max)
	}
}
