package intake_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/intake"
)

// TestTheBlockingRecordComesWithTheFailedCreate: a create that meets a
// record asks for it with ReturnValuesOnConditionCheckFailure=ALL_OLD,
// and DynamoDB (and the local DynamoDB, TestConditionCheckFailureReturnsTheItem)
// sends it in the failure, so no read follows. An endpoint that leaves it
// out costs one consistent GetItem, with the same answer.
func TestTheBlockingRecordComesWithTheFailedCreate(t *testing.T) {
	for _, tt := range []struct {
		name     string
		dropItem bool
		reads    int64
	}{
		{name: "the failure carries the record", reads: 0},
		{name: "an endpoint that leaves it out", dropItem: true, reads: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newClocked(t, localaws.Faults{})
			ev := drillEvent(c.env, "evt_blocked")
			mustAccept(t, c.store, ev)
			stored := c.record(t, ev)
			client := &withoutALLOld{DynamoDBAPI: c.env.DynamoDB, drop: tt.dropItem}
			store, err := intake.New(intake.Config{DynamoDB: client, SQS: c.env.SQS, Table: c.env.TableName("IntakeTable"),
				Lease: specLease, BusyWait: specBusyWait, Now: c.clock.Now})
			if err != nil {
				t.Fatal(err)
			}
			// When the same ID comes with another body, the create fails on
			// the first delivery's record, which the store reads from the
			// failure or, without it, from a consistent GetItem,
			reused := ev
			reused.Payload = []byte(`{"id":"evt_blocked","amount":1}`)
			if res, err := store.Accept(context.Background(), reused); !errors.Is(err, intake.ErrConflict) || res.Calls != 1 {
				t.Fatalf("Accept of a reused ID = %+v, %v; want ErrConflict after 1 call", res, err)
			}
			if got := client.consistentReads.Load(); got != tt.reads || client.allOld.Load() != 1 {
				t.Fatalf("%d consistent reads after %d creates asking for ALL_OLD; want %d after 1", got, client.allOld.Load(), tt.reads)
			}
			if rec := c.record(t, ev); rec != stored {
				t.Errorf("record after the conflict\n %+v\nwant\n %+v", rec, stored)
			}
		})
	}
}

// withoutALLOld counts creates that ask for ALL_OLD and consistent reads,
// and with drop leaves the item out of a failed condition, as an endpoint
// without ReturnValuesOnConditionCheckFailure does.
type withoutALLOld struct {
	intake.DynamoDBAPI
	drop            bool
	allOld          atomic.Int64
	consistentReads atomic.Int64
}

func (w *withoutALLOld) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if in.ReturnValuesOnConditionCheckFailure == ddbtypes.ReturnValuesOnConditionCheckFailureAllOld {
		w.allOld.Add(1)
	}
	out, err := w.DynamoDBAPI.PutItem(ctx, in, opts...)
	if ccf, ok := errors.AsType[*ddbtypes.ConditionalCheckFailedException](err); ok && w.drop {
		ccf.Item = nil
	}
	return out, err
}

func (w *withoutALLOld) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if aws.ToBool(in.ConsistentRead) {
		w.consistentReads.Add(1)
	}
	return w.DynamoDBAPI.GetItem(ctx, in, opts...)
}
