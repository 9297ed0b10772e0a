package idempotency_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/pkg/idempotency"
	"github.com/hookline/hookline/pkg/idempotency/idempotencytest"
)

func TestDynamoDBStore(t *testing.T) {
	env := localaws.StartForTest(t)
	table := env.TableName("IdempotencyTable")
	if table == "" {
		t.Fatal("template has no IdempotencyTable")
	}
	idempotencytest.Run(t, func(t *testing.T) idempotency.Store {
		st, err := idempotency.NewDynamoDB(idempotency.DynamoDBConfig{Client: env.DynamoDB, Table: table})
		if err != nil {
			t.Fatal(err)
		}
		return st
	})
}

// stubDynamoDB injects DynamoDB responses and counts the calls.
type stubDynamoDB struct {
	idempotency.DynamoDBAPI // nil: the store calls only the methods below
	put                     func(*dynamodb.PutItemInput) (*dynamodb.PutItemOutput, error)
	get                     func(*dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error)
	update                  func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error)
	puts, gets, upds        int
}

func (s *stubDynamoDB) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	s.puts++
	return s.put(in)
}

func (s *stubDynamoDB) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	s.gets++
	return s.get(in)
}

func (s *stubDynamoDB) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	s.upds++
	return s.update(in)
}

func (s *stubDynamoDB) DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return nil, errors.New("unexpected DeleteItem")
}

func s(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberS{Value: v} }
func n(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberN{Value: v} }

func completedItem(key, hash string) map[string]ddbtypes.AttributeValue {
	return map[string]ddbtypes.AttributeValue{
		"pk": s(key), "status": s("COMPLETED"), "token": s("tok"), "payload_hash": s(hash),
		"result":     &ddbtypes.AttributeValueMemberB{Value: []byte("stored")},
		"expires_at": n("4102444800"), "claimed_at": n("1767225600000"), "completed_at": n("1767225601000"),
	}
}

func newStubRegistry(t *testing.T, stub *stubDynamoDB) *idempotency.Registry {
	t.Helper()
	st, err := idempotency.NewDynamoDB(idempotency.DynamoDBConfig{Client: stub, Table: "idem"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := idempotency.New(idempotency.Config{
		Store: st, Namespace: "payments",
		Now: func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) },
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestDynamoDBClaimReadsAllOldWithoutGet(t *testing.T) {
	hash := idempotency.Hash("x")
	notFound := func(*dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error) { return &dynamodb.GetItemOutput{}, nil }
	tests := []struct {
		name     string
		put      func(*dynamodb.PutItemInput) (*dynamodb.PutItemOutput, error)
		get      func(*dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error)
		want     idempotency.Status
		wantPuts int
		wantGets int
	}{
		{
			name: "failure carries the old item",
			put: func(in *dynamodb.PutItemInput) (*dynamodb.PutItemOutput, error) {
				if in.ReturnValuesOnConditionCheckFailure != ddbtypes.ReturnValuesOnConditionCheckFailureAllOld {
					return nil, errors.New("ALL_OLD not requested")
				}
				return nil, &ddbtypes.ConditionalCheckFailedException{Item: completedItem("payments#evt_1", hash)}
			},
			get:  notFound,
			want: idempotency.StatusAlreadyCompleted, wantPuts: 1, wantGets: 0,
		},
		{
			name: "failure without item falls back to a consistent read",
			put: func(*dynamodb.PutItemInput) (*dynamodb.PutItemOutput, error) {
				return nil, &ddbtypes.ConditionalCheckFailedException{}
			},
			get: func(in *dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error) {
				if in.ConsistentRead == nil || !*in.ConsistentRead {
					return nil, errors.New("read is not consistent")
				}
				return &dynamodb.GetItemOutput{Item: completedItem("payments#evt_1", hash)}, nil
			},
			want: idempotency.StatusAlreadyCompleted, wantPuts: 1, wantGets: 1,
		},
		{
			name: "blocking record released before the read: claim again",
			put: func() func(*dynamodb.PutItemInput) (*dynamodb.PutItemOutput, error) {
				calls := 0
				return func(*dynamodb.PutItemInput) (*dynamodb.PutItemOutput, error) {
					if calls++; calls == 1 {
						return nil, &ddbtypes.ConditionalCheckFailedException{}
					}
					return &dynamodb.PutItemOutput{}, nil
				}
			}(),
			get:  notFound,
			want: idempotency.StatusClaimed, wantPuts: 2, wantGets: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Given a table answering as described,
			stub := &stubDynamoDB{put: tt.put, get: tt.get}
			// when a key is claimed,
			c, err := newStubRegistry(t, stub).Claim(t.Context(), "evt_1", hash)
			// then the outcome and the number of calls match.
			if err != nil {
				t.Fatal(err)
			}
			if c.Status != tt.want {
				t.Fatalf("status = %s, want %s", c.Status, tt.want)
			}
			if tt.want == idempotency.StatusAlreadyCompleted && string(c.Result) != "stored" {
				t.Errorf("result = %q", c.Result)
			}
			if stub.puts != tt.wantPuts || stub.gets != tt.wantGets {
				t.Errorf("puts, gets = %d, %d; want %d, %d", stub.puts, stub.gets, tt.wantPuts, tt.wantGets)
			}
		})
	}
}

func TestDynamoDBFailuresAreUnavailable(t *testing.T) {
	throttled := &ddbtypes.ProvisionedThroughputExceededException{Message: aws.String("slow down")}
	tests := []struct {
		name    string
		stub    *stubDynamoDB
		call    func(context.Context, *idempotency.Registry) error
		wantErr error // matched with errors.Is besides ErrUnavailable
	}{
		{
			name: "claim throttled",
			stub: &stubDynamoDB{put: func(*dynamodb.PutItemInput) (*dynamodb.PutItemOutput, error) { return nil, throttled }},
			call: func(ctx context.Context, r *idempotency.Registry) error {
				_, err := r.Claim(ctx, "evt_1", idempotency.Hash("x"))
				return err
			},
			wantErr: throttled,
		},
		{
			name: "record keeps changing under the claim",
			stub: &stubDynamoDB{
				put: func(*dynamodb.PutItemInput) (*dynamodb.PutItemOutput, error) {
					return nil, &ddbtypes.ConditionalCheckFailedException{}
				},
				get: func(*dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error) { return &dynamodb.GetItemOutput{}, nil },
			},
			call: func(ctx context.Context, r *idempotency.Registry) error {
				_, err := r.Claim(ctx, "evt_1", idempotency.Hash("x"))
				return err
			},
		},
		{
			name: "malformed item",
			stub: &stubDynamoDB{get: func(*dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error) {
				return &dynamodb.GetItemOutput{Item: map[string]ddbtypes.AttributeValue{"pk": s("payments#evt_1"), "status": s("DONE")}}, nil
			}},
			call: func(ctx context.Context, r *idempotency.Registry) error {
				_, _, err := r.Status(ctx, "evt_1")
				return err
			},
		},
		{
			name: "complete fails",
			stub: &stubDynamoDB{update: func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) { return nil, throttled }},
			call: func(ctx context.Context, r *idempotency.Registry) error {
				return r.Complete(ctx, "evt_1", "tok", []byte("r"))
			},
			wantErr: throttled,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Given a table that fails as described, when the registry calls it,
			err := tt.call(t.Context(), newStubRegistry(t, tt.stub))
			// then the error is an infrastructure failure that keeps its cause.
			if !idempotency.IsUnavailable(err) {
				t.Fatalf("err = %v, want ErrUnavailable", err)
			}
			var se *idempotency.StoreError
			if !errors.As(err, &se) || se.Key != "payments#evt_1" {
				t.Errorf("err = %#v, want a StoreError for payments#evt_1", err)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("err = %v, want it to wrap %v", err, tt.wantErr)
			}
		})
	}
}

func TestNewDynamoDBValidates(t *testing.T) {
	// Given an empty config, then construction reports both missing fields.
	_, err := idempotency.NewDynamoDB(idempotency.DynamoDBConfig{})
	if !errors.Is(err, idempotency.ErrInvalidConfig) {
		t.Fatalf("err = %v, want ErrInvalidConfig", err)
	}
	for _, want := range []string{"Client", "Table"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}
