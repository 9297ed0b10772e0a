package idempotency

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/ddb"
)

// DynamoDBAPI is the DynamoDB client that [DynamoDB] uses.
// *dynamodb.Client satisfies it.
type DynamoDBAPI = ddb.API

// DynamoDBConfig configures [NewDynamoDB].
type DynamoDBConfig struct {
	// Client is the DynamoDB client. Required.
	Client DynamoDBAPI
	// Table is the idempotency table: partition key "pk" (S), no sort key,
	// TTL on "expires_at". Required.
	Table string
}

// Validate reports every problem with c at once.
func (c DynamoDBConfig) Validate() error {
	var errs []error
	if c.Client == nil {
		errs = append(errs, errors.New("Client is required"))
	}
	if c.Table == "" {
		errs = append(errs, errors.New("Table is required"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
	}
	return nil
}

// DynamoDB is the [Store] on a DynamoDB table. Each record is one item:
//
//	pk                 S  stored key ("payments#stripe:evt_1")
//	status             S  IN_PROGRESS or COMPLETED
//	token              S  the holder's fencing token
//	payload_hash       S  hex SHA-256 of the fields that matter
//	result             B  the stored result (COMPLETED, when not empty)
//	in_progress_until  N  Unix milliseconds (IN_PROGRESS only)
//	expires_at         N  Unix seconds: retention, and the table's TTL
//	claimed_at         N  Unix milliseconds
//	completed_at       N  Unix milliseconds (COMPLETED only)
//	attempt            N  claims within retention, this one included
type DynamoDB struct {
	client DynamoDBAPI
	table  *string
}

var _ Store = (*DynamoDB)(nil)

// NewDynamoDB returns the DynamoDB store for cfg.
func NewDynamoDB(cfg DynamoDBConfig) (*DynamoDB, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &DynamoDB{client: cfg.Client, table: aws.String(cfg.Table)}, nil
}

// Item attribute names.
const (
	attrPK          = "pk"
	attrStatus      = "status"
	attrToken       = "token"
	attrPayloadHash = "payload_hash"
	attrResult      = "result"
	attrHeldUntil   = "in_progress_until"
	attrExpiresAt   = "expires_at"
	attrClaimedAt   = "claimed_at"
	attrCompletedAt = "completed_at"
	attrAttempt     = "attempt"
)

// The store's expressions, built once; their values are bound per call
// (see [ddb.Template]).
var (
	// freshClaim lets a claim write a key that has no record, or whose
	// record has passed its retention: attempt 1.
	freshClaim = ddb.MustTemplate(expression.NewBuilder().WithCondition(
		expression.AttributeNotExists(expression.Name(attrPK)).
			Or(expression.Name(attrExpiresAt).LessThan(ddb.Slot("now_s")))))

	// takeoverClaim lets a claim replace exactly the stale in-progress
	// record it read (same token, same payload, window passed), carrying
	// its attempt count forward. A holder that released or was replaced
	// since fails it.
	takeoverClaim = ddb.MustTemplate(expression.NewBuilder().WithCondition(heldBy().
			And(expression.Name(attrHeldUntil).LessThan(ddb.Slot("now_ms"))).
			And(expression.Name(attrPayloadHash).Equal(ddb.Slot("payload_hash")))))

	// complete and completeWithResult settle a claim; release hands it
	// back. Each holds only while the token holds the claim.
	complete           = heldUpdate(completion())
	completeWithResult = heldUpdate(completion().Set(expression.Name(attrResult), ddb.Slot("result")))
	release            = heldUpdate(expression.Set(expression.Name(attrHeldUntil), ddb.Slot("held_until")))
)

// heldBy holds while the record is in progress under the token slot.
func heldBy() expression.ConditionBuilder {
	return expression.Name(attrToken).Equal(ddb.Slot("token")).
		And(expression.Name(attrStatus).Equal(expression.Value(string(StateInProgress))))
}

func completion() expression.UpdateBuilder {
	return expression.Set(expression.Name(attrStatus), expression.Value(string(StateCompleted))).
		Set(expression.Name(attrCompletedAt), ddb.Slot("completed_at")).
		Set(expression.Name(attrExpiresAt), ddb.Slot("expires_at")).
		Remove(expression.Name(attrHeldUntil))
}

func heldUpdate(upd expression.UpdateBuilder) *ddb.Template {
	return ddb.MustTemplate(expression.NewBuilder().WithUpdate(upd).WithCondition(heldBy()))
}

// claimAttempts bounds the retries when the record that failed the
// condition has changed by the time it is read.
const claimAttempts = 4

// errClaimRace reports a record that kept changing between a failed claim
// and the read that followed it.
var errClaimRace = errors.New("record kept changing between claim and read")

// Claim implements [Store]. A new key is one conditional PutItem. When a
// record blocks it, the record is read from the error
// (ReturnValuesOnConditionCheckFailure=ALL_OLD), or, when the error carries
// no item, with a consistent GetItem; a stale claim for the same payload is
// then replaced by a second PutItem conditioned on that very record, so the
// attempt count it carries forward cannot be lost to a concurrent writer.
func (d *DynamoDB) Claim(ctx context.Context, rec Record, now time.Time) (Record, bool, error) {
	var (
		cur    Record
		exists bool
	)
	for range claimAttempts {
		rec.Attempt = NextAttempt(cur, exists, now)
		in, err := d.claimInput(rec, cur, exists, now)
		if err != nil {
			return Record{}, false, err
		}
		out, err := d.client.PutItem(ctx, in)
		if err == nil {
			return replaced(out.Attributes), true, nil
		}
		var ccf *ddbtypes.ConditionalCheckFailedException
		if !errors.As(err, &ccf) {
			return Record{}, false, fmt.Errorf("idempotency: put %s: %w", rec.Key, err)
		}
		cur, exists, err = d.blocking(ctx, rec.Key, ccf.Item)
		if err != nil {
			return Record{}, false, err
		}
		if exists && cur.Retained(now) && !Claimable(cur, rec.PayloadHash, now) {
			return cur, false, nil
		}
		// Released, expired or stale since the put: try again on what is
		// there now.
	}
	return Record{}, false, fmt.Errorf("idempotency: claim %s: %w", rec.Key, errClaimRace)
}

// claimInput is the PutItem of a claim: fresh when no retained record was
// read, a takeover of cur otherwise.
func (d *DynamoDB) claimInput(rec, cur Record, exists bool, now time.Time) (*dynamodb.PutItemInput, error) {
	tmpl, bind := freshClaim, map[string]any{"now_s": now.Unix()}
	if exists && cur.Retained(now) {
		tmpl, bind = takeoverClaim, map[string]any{"token": cur.Token, "now_ms": now.UnixMilli(), "payload_hash": rec.PayloadHash}
	}
	values, err := tmpl.Values(bind)
	if err != nil {
		return nil, fmt.Errorf("idempotency: claim %s: %w", rec.Key, err)
	}
	return &dynamodb.PutItemInput{
		TableName:                           d.table,
		Item:                                marshalRecord(rec),
		ConditionExpression:                 tmpl.Condition(),
		ExpressionAttributeNames:            tmpl.Names(),
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: ddbtypes.ReturnValuesOnConditionCheckFailureAllOld,
		ReturnValues:                        ddbtypes.ReturnValueAllOld,
	}, nil
}

// replaced decodes the item a successful claim overwrote; a malformed one
// still counts as replaced.
func replaced(item map[string]ddbtypes.AttributeValue) Record {
	if len(item) == 0 {
		return Record{}
	}
	rec, err := unmarshalRecord(item)
	if err != nil {
		return Record{Key: "replaced"}
	}
	return rec
}

// blocking returns the record that failed a claim's condition: from the
// error's ALL_OLD item when it has one, or by a consistent read.
func (d *DynamoDB) blocking(ctx context.Context, key string, item map[string]ddbtypes.AttributeValue) (Record, bool, error) {
	if len(item) > 0 {
		rec, err := unmarshalRecord(item)
		if err != nil {
			return Record{}, false, err
		}
		return rec, true, nil
	}
	return d.Get(ctx, key)
}

// Complete implements [Store] with one UpdateItem conditioned on the token
// and the IN_PROGRESS status.
func (d *DynamoDB) Complete(ctx context.Context, key, token string, result []byte, completedAt, expiresAt time.Time) (Record, error) {
	tmpl, bind := complete, map[string]any{"token": token, "completed_at": completedAt.UnixMilli(), "expires_at": expiresAt.Unix()}
	if len(result) > 0 {
		tmpl, bind["result"] = completeWithResult, result
	}
	out, err := d.update(ctx, key, tmpl, bind, ddbtypes.ReturnValueAllNew)
	switch {
	case ddb.ConditionFailed(err):
		return Record{}, ErrClaimLost
	case err != nil:
		return Record{}, fmt.Errorf("idempotency: update %s: %w", key, err)
	}
	return unmarshalRecord(out.Attributes)
}

// Release implements [Store] with one UpdateItem conditioned on the token
// and the IN_PROGRESS status.
func (d *DynamoDB) Release(ctx context.Context, key, token string, heldUntil time.Time) error {
	_, err := d.update(ctx, key, release, map[string]any{"token": token, "held_until": heldUntil.UnixMilli()}, ddbtypes.ReturnValueNone)
	switch {
	case ddb.ConditionFailed(err):
		return ErrClaimLost
	case err != nil:
		return fmt.Errorf("idempotency: update %s: %w", key, err)
	}
	return nil
}

// update applies tmpl, bound to bind, to key's record; every template's
// condition holds only while the bound token holds the claim.
func (d *DynamoDB) update(ctx context.Context, key string, tmpl *ddb.Template, bind map[string]any, ret ddbtypes.ReturnValue) (*dynamodb.UpdateItemOutput, error) {
	values, err := tmpl.Values(bind)
	if err != nil {
		return nil, fmt.Errorf("idempotency: update %s: %w", key, err)
	}
	return d.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 d.table,
		Key:                       keyOf(key),
		UpdateExpression:          tmpl.Update(),
		ConditionExpression:       tmpl.Condition(),
		ExpressionAttributeNames:  tmpl.Names(),
		ExpressionAttributeValues: values,
		ReturnValues:              ret,
	})
}

// Get implements [Store] with a consistent GetItem.
func (d *DynamoDB) Get(ctx context.Context, key string) (Record, bool, error) {
	out, err := d.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      d.table,
		Key:            keyOf(key),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Record{}, false, fmt.Errorf("idempotency: get %s: %w", key, err)
	}
	if len(out.Item) == 0 {
		return Record{}, false, nil
	}
	rec, err := unmarshalRecord(out.Item)
	if err != nil {
		return Record{}, false, err
	}
	return rec, true, nil
}

func str(s string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberS{Value: s} }

func num(n int64) ddbtypes.AttributeValue {
	return &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

func keyOf(key string) map[string]ddbtypes.AttributeValue {
	return map[string]ddbtypes.AttributeValue{attrPK: str(key)}
}

// marshalRecord returns the item for an in-progress record.
func marshalRecord(r Record) map[string]ddbtypes.AttributeValue {
	item := map[string]ddbtypes.AttributeValue{
		attrPK:          str(r.Key),
		attrStatus:      str(string(r.State)),
		attrToken:       str(r.Token),
		attrPayloadHash: str(r.PayloadHash),
		attrExpiresAt:   num(r.ExpiresAt.Unix()),
		attrClaimedAt:   num(r.ClaimedAt.UnixMilli()),
		attrAttempt:     num(int64(r.Attempt)),
	}
	if !r.HeldUntil.IsZero() {
		item[attrHeldUntil] = num(r.HeldUntil.UnixMilli())
	}
	return item
}

// errMalformed reports an item that is not a record of this package.
var errMalformed = errors.New("malformed idempotency item")

// unmarshalRecord decodes an item written by this package.
func unmarshalRecord(item map[string]ddbtypes.AttributeValue) (Record, error) {
	var (
		r    Record
		errs []error
	)
	getS := func(name string, required bool) string {
		switch v := item[name].(type) {
		case *ddbtypes.AttributeValueMemberS:
			return v.Value
		case nil:
			if required {
				errs = append(errs, fmt.Errorf("%s is missing", name))
			}
		default:
			errs = append(errs, fmt.Errorf("%s is not a string", name))
		}
		return ""
	}
	getN := func(name string, required bool) (int64, bool) {
		switch v := item[name].(type) {
		case *ddbtypes.AttributeValueMemberN:
			n, err := strconv.ParseInt(v.Value, 10, 64)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
				return 0, false
			}
			return n, true
		case nil:
			if required {
				errs = append(errs, fmt.Errorf("%s is missing", name))
			}
		default:
			errs = append(errs, fmt.Errorf("%s is not a number", name))
		}
		return 0, false
	}
	r.Key = getS(attrPK, true)
	r.State = State(getS(attrStatus, true))
	r.Token = getS(attrToken, true)
	r.PayloadHash = getS(attrPayloadHash, true)
	if n, ok := getN(attrExpiresAt, true); ok {
		r.ExpiresAt = time.Unix(n, 0)
	}
	// A held-until means something only while the claim is in progress;
	// Complete removes it, and it is ignored if left behind.
	if n, ok := getN(attrHeldUntil, false); ok && r.State == StateInProgress {
		r.HeldUntil = time.UnixMilli(n)
	}
	if n, ok := getN(attrClaimedAt, false); ok {
		r.ClaimedAt = time.UnixMilli(n)
	}
	if n, ok := getN(attrCompletedAt, false); ok {
		r.CompletedAt = time.UnixMilli(n)
	}
	if n, ok := getN(attrAttempt, false); ok {
		r.Attempt = int(n)
	}
	switch v := item[attrResult].(type) {
	case *ddbtypes.AttributeValueMemberB:
		if len(v.Value) > 0 {
			r.Result = v.Value
		}
	case nil:
	default:
		errs = append(errs, fmt.Errorf("%s is not binary", attrResult))
	}
	if r.State != "" && r.State != StateInProgress && r.State != StateCompleted {
		errs = append(errs, fmt.Errorf("%s %q is unknown", attrStatus, r.State))
	}
	if len(errs) > 0 {
		return Record{}, fmt.Errorf("%w %q: %w", errMalformed, r.Key, errors.Join(errs...))
	}
	return r, nil
}
