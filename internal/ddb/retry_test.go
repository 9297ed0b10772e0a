package ddb_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/ddb"
)

// TestWriteRetriesOnlyConflicts: a write refused because a transaction
// holds its item is tried again, up to the attempts; any other error is
// returned at once, and running out of attempts is ddb.ErrContended.
func TestWriteRetriesOnlyConflicts(t *testing.T) {
	r := ddb.Retry{Attempts: 4, Base: time.Microsecond, Max: time.Microsecond}
	conflict := &types.TransactionConflictException{}
	for _, tc := range []struct {
		name      string
		errs      []error
		calls     int
		contended bool
	}{
		{"two conflicts, then done", []error{conflict, conflict, nil}, 3, false},
		{"a failed condition at once", []error{&types.ConditionalCheckFailedException{}}, 1, false},
		{"conflicts past the attempts", []error{conflict, conflict, conflict, conflict, nil}, 4, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			err := r.Write(context.Background(), func() error {
				calls++
				return tc.errs[calls-1]
			})
			if calls != tc.calls || errors.Is(err, ddb.ErrContended) != tc.contended {
				t.Fatalf("%d calls, err %v; want %d calls, contended %v", calls, err, tc.calls, tc.contended)
			}
			if !tc.contended && !errors.Is(err, tc.errs[calls-1]) && err != tc.errs[calls-1] {
				t.Fatalf("err %v, want the last attempt's %v", err, tc.errs[calls-1])
			}
		})
	}
}
