package intake

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/ddb"
)

// Accept records ev durably and enqueues it once. It returns Accepted or
// Duplicate only when the event is on its queue; every other answer means
// the provider must retry (or, for ErrConflict and ErrTooLarge, must not).
// An event an earlier build stored under another ID (ev.LegacyEventID) is
// answered from that record.
func (s *Store) Accept(ctx context.Context, ev Event) (Result, error) {
	if err := checkSize(ev); err != nil {
		return Result{}, err
	}
	calls := 0
	if ev.LegacyEventID != "" && ev.LegacyEventID != ev.EventID && len(ev.LegacyPayload) > 0 {
		old, found, err := s.legacy(ctx, ev)
		calls++
		if err != nil {
			return Result{Calls: calls}, err
		}
		if found {
			return s.resume(ctx, old, calls)
		}
	}
	now := s.cfg.Now()
	rec := s.newRecord(ev, now)
	old, created, err := s.create(ctx, rec)
	calls++
	if err != nil {
		return Result{Calls: calls}, err
	}
	if created {
		return s.send(ctx, rec, calls)
	}
	// A digest of the signed bytes names those bytes: the payloads may
	// differ only in what no signature covers, and the first one stays.
	if !ev.DigestID && old.PayloadSHA256 != rec.PayloadSHA256 && !earlierForm(ev, old) {
		return Result{Calls: calls}, fmt.Errorf("event %s/%s: %w", ev.Source, ev.EventID, ErrConflict)
	}
	return s.resume(ctx, old, calls)
}

// earlierForm reports whether old holds the payload an earlier build
// made of ev under ev's own ID (ev.LegacyPayload with ev.LegacyEventID
// equal to ev.EventID): the same event, whose record is resumed as it is.
func earlierForm(ev Event, old Record) bool {
	return ev.LegacyEventID == ev.EventID && len(ev.LegacyPayload) > 0 && old.PayloadSHA256 == PayloadHash(ev.LegacyPayload)
}

// legacy reads, consistently, the record an earlier build stored ev
// under (ev.LegacyEventID), and reports whether it is ev's: a record of
// the payload that build made of the same bytes, ev.LegacyPayload. Such
// a record answers ev (resume, as any redelivery) and no record is
// written under ev's own key; a record of another payload is another
// event's, whose unsigned ID this delivery carries, and is left alone.
//
// It is read before ev's own key is tried, which costs the read on
// every delivery that has a legacy ID but decides only when the legacy
// record is there: then ev has no record of its own, unless both builds
// took the event during the deploy, when either record is a duplicate.
// What it cannot do: a delivery captured before the upgrade and re-sent
// under a new ID header, within one retention of the upgrade, names no
// legacy record, and the old record is keyed by the header's ID alone,
// so the intake takes it for a new event (as the build before would
// have). Once every record an earlier build wrote has expired, the
// legacy ID decides nothing and the read can go.
func (s *Store) legacy(ctx context.Context, ev Event) (Record, bool, error) {
	old, found, err := s.Get(ctx, ev.Source, ev.LegacyEventID)
	if err != nil || !found {
		return Record{}, false, err
	}
	if old.PayloadSHA256 != PayloadHash(ev.LegacyPayload) {
		s.cfg.Logger.WarnContext(ctx, "intake: a record under the legacy event ID holds another payload", "source", ev.Source,
			"legacy_event_id", ev.LegacyEventID, "event_id", ev.EventID)
		return Record{}, false, nil
	}
	return old, true, nil
}

func (s *Store) newRecord(ev Event, now time.Time) Record {
	rec := Record{
		PK:             Key(ev.Source, ev.EventID),
		Source:         ev.Source,
		SourceShard:    ShardKey(ev.Source, ev.EventID),
		EventID:        ev.EventID,
		ReceivedAt:     formatTime(now),
		Verification:   "verified",
		PayloadSHA256:  PayloadHash(ev.Payload),
		Payload:        string(ev.Payload),
		Status:         StatusReceived,
		QueueURL:       ev.QueueURL,
		LeaseUntil:     now.Add(s.cfg.Lease).UnixMilli(),
		LeaseToken:     newToken(),
		FirstRequestID: ev.RequestID,
		ExpiresAt:      now.Add(s.cfg.Retention).Unix(),
	}
	if !ev.ProviderTimestamp.IsZero() {
		rec.ProviderTimestamp = formatTime(ev.ProviderTimestamp)
	}
	return rec
}

// create puts rec if its key is new. Otherwise it returns the existing
// record ([Store.blocking]), unless that record is rec itself. The stored
// record leaves out its source, the key's prefix: an item with a source
// would also write the one partition of [IndexBySourceReceived] that the
// source's every event shares.
func (s *Store) create(ctx context.Context, rec Record) (Record, bool, error) {
	stored := rec
	stored.Source = ""
	item, err := attributevalue.MarshalMap(stored)
	if err != nil {
		return Record{}, false, fmt.Errorf("intake: encode record: %w", err)
	}
	_, err = s.cfg.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           aws.String(s.cfg.Table),
		Item:                                item,
		ConditionExpression:                 exprCreate.Condition(),
		ExpressionAttributeNames:            exprCreate.Names(),
		ReturnValuesOnConditionCheckFailure: ddbtypes.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		return rec, true, nil
	}
	var ccf *ddbtypes.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return Record{}, false, unavailable("record intake", err)
	}
	old, err := s.blocking(ctx, rec, ccf.Item)
	if err != nil {
		return Record{}, false, err
	}
	// The SDK retries a put whose answer was lost (a 500 or a dropped
	// connection after it committed); the retry then fails its condition
	// on the record the first attempt wrote. Lease tokens are random, so a
	// record with this delivery's token is its own: go on and send.
	if old.LeaseToken == rec.LeaseToken {
		return rec, true, nil
	}
	return old, false, nil
}

// blocking returns the record that failed rec's create: from
// ReturnValuesOnConditionCheckFailure when the service sends it, or from a
// consistent read when it does not (some emulators).
func (s *Store) blocking(ctx context.Context, rec Record, item map[string]ddbtypes.AttributeValue) (Record, error) {
	if item != nil {
		var old Record
		if err := attributevalue.UnmarshalMap(item, &old); err != nil {
			return Record{}, fmt.Errorf("intake: decode record: %w", err)
		}
		old.fill()
		return old, nil
	}
	old, ok, err := s.Get(ctx, rec.Source, rec.EventID)
	if err != nil {
		return Record{}, err
	}
	if !ok {
		return Record{}, unavailable("record intake", errors.New("record vanished after a failed create"))
	}
	return old, nil
}

// resume handles a redelivery that found the record "received". Nothing
// marks a record once it is sent (that write would cost a call and the
// payload's units on every event), so a received record is sent, being
// sent, or left unsent by a holder that died. The redelivery waits for
// the holder's lease to run out (up to BusyWait), takes it, and sends
// again: at worst a second message, which the worker's idempotency
// absorbs, never a lost event. A lease the holder released after a failed
// send is taken at once, and that send is the event's first.
func (s *Store) resume(ctx context.Context, old Record, calls int) (Result, error) {
	if old.Status == StatusEnqueued {
		return duplicate(old, calls), nil
	}
	released := old.LeaseUntil == 0
	if err := s.awaitLease(ctx, old); err != nil {
		return Result{Calls: calls}, err
	}
	rec, took, err := s.takeLease(ctx, old, s.cfg.Now())
	calls++
	if err != nil {
		return Result{Calls: calls}, err
	}
	if !took {
		// Another redelivery took the lease first and is sending now.
		return Result{Calls: calls}, fmt.Errorf("event %s/%s: %w", old.Source, old.EventID, ErrBusy)
	}
	res, err := s.send(ctx, rec, calls)
	if err == nil && !released {
		res.Outcome = Duplicate
	}
	return res, err
}

// awaitLease waits for old's send lease to run out. It answers ErrBusy
// when that is further off than BusyWait.
func (s *Store) awaitLease(ctx context.Context, old Record) error {
	wait := time.UnixMilli(old.LeaseUntil + 1).Sub(s.cfg.Now())
	if wait <= 0 {
		return nil
	}
	if wait > s.cfg.BusyWait {
		return fmt.Errorf("event %s/%s: %w", old.Source, old.EventID, ErrBusy)
	}
	select {
	case <-ctx.Done():
		return unavailable("wait for lease", ctx.Err())
	case <-time.After(wait):
		return nil
	}
}

// duplicate answers a redelivery of a record that an older build marked
// enqueued: it is on its queue, and is not sent again.
func duplicate(old Record, calls int) Result {
	return Result{Outcome: Duplicate, MessageID: old.MessageID, Calls: calls, ReceivedAt: parseTime(old.ReceivedAt)}
}

// takeLease moves an expired lease to this delivery. It reports false when
// another delivery took it first.
func (s *Store) takeLease(ctx context.Context, old Record, now time.Time) (Record, bool, error) {
	rec := old
	rec.LeaseToken = newToken()
	rec.LeaseUntil = now.Add(s.cfg.Lease).UnixMilli()
	err := s.update(ctx, old.PK, exprTakeLease, map[string]any{"new_token": rec.LeaseToken, "lease_until": rec.LeaseUntil, "lease_token": old.LeaseToken})
	switch {
	case err == nil:
		return rec, true, nil
	case ddb.ConditionFailed(err):
		return s.ownLease(ctx, old, rec)
	default:
		return old, false, unavailable("take send lease", err)
	}
}

// ownLease decides a take-over whose condition failed. Usually another
// delivery took the lease first. But the SDK retries an update whose
// answer was lost after it committed, and that retry fails its condition
// on the token the first attempt wrote: a record that carries rec's new
// token, still received, is this delivery's own take-over.
func (s *Store) ownLease(ctx context.Context, old, rec Record) (Record, bool, error) {
	cur, ok, err := s.Get(ctx, old.Source, old.EventID)
	if err != nil {
		return old, false, err
	}
	if ok && cur.Status == StatusReceived && cur.LeaseToken == rec.LeaseToken {
		return rec, true, nil
	}
	return old, false, nil
}

// send enqueues rec. Once SendMessage succeeds the event is durable on
// the queue, and the receiver may answer 200.
func (s *Store) send(ctx context.Context, rec Record, calls int) (Result, error) {
	out, err := s.cfg.SQS.SendMessage(ctx, SendInput(rec))
	calls++
	if err != nil {
		s.releaseLease(ctx, rec)
		return Result{Calls: calls + 1}, unavailable("enqueue", err)
	}
	return Result{Outcome: Accepted, MessageID: aws.ToString(out.MessageId), Calls: calls, ReceivedAt: parseTime(rec.ReceivedAt)}, nil
}

// The store's expressions, built once; their values are bound per call
// (see [ddb.Template]).
var (
	// exprCreate puts a record only if its key is new.
	exprCreate = ddb.MustTemplate(expression.NewBuilder().WithCondition(expression.AttributeNotExists(expression.Name("pk"))))
	// exprTakeLease takes the send lease of a received record from the
	// holder that was read.
	exprTakeLease = ddb.MustTemplate(expression.NewBuilder().
			WithUpdate(expression.Set(expression.Name("lease_token"), ddb.Slot("new_token")).
				Set(expression.Name("lease_until"), ddb.Slot("lease_until"))).
			WithCondition(expression.Name("status").Equal(expression.Value(StatusReceived)).
				And(expression.Name("lease_token").Equal(ddb.Slot("lease_token")))))
	// exprReleaseLease gives up the lease of a record still received.
	exprReleaseLease = ddb.MustTemplate(expression.NewBuilder().
				WithUpdate(expression.Set(expression.Name("lease_until"), expression.Value(0))).
				WithCondition(expression.Name("lease_token").Equal(ddb.Slot("lease_token")).
					And(expression.Name("status").Equal(expression.Value(StatusReceived)))))
)

// update applies tmpl, bound to bind, to the record pk.
func (s *Store) update(ctx context.Context, pk string, tmpl *ddb.Template, bind map[string]any) error {
	values, err := tmpl.Values(bind)
	if err != nil {
		return fmt.Errorf("intake: %w", err)
	}
	_, err = s.cfg.DynamoDB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.cfg.Table), Key: recordKey(pk),
		UpdateExpression: tmpl.Update(), ConditionExpression: tmpl.Condition(),
		ExpressionAttributeNames: tmpl.Names(), ExpressionAttributeValues: values,
	})
	return err
}

// releaseLease lets the provider's next retry send at once after a failed
// send, instead of waiting out the lease. It is best effort.
func (s *Store) releaseLease(ctx context.Context, rec Record) {
	err := s.update(context.WithoutCancel(ctx), rec.PK, exprReleaseLease, map[string]any{"lease_token": rec.LeaseToken})
	if err != nil {
		s.cfg.Logger.DebugContext(ctx, "release send lease", "event_id", rec.EventID, "err", err)
	}
}
