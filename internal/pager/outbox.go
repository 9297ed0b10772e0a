package pager

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/ddb"
)

// DB is the DynamoDB client the outbox uses.
type DB = ddb.API

// Page statuses.
const (
	StatusPending = "pending"
	StatusSent    = "sent"
	StatusFailed  = "failed"
)

// OutboxConfig configures an [Outbox].
type OutboxConfig struct {
	DB DB
	// Table holds the outbox items (hookline uses the ledger table).
	Table string
	// Sender delivers pages in Flush. Optional for an outbox that only
	// enqueues or lists.
	Sender Sender
	// BaseBackoff is the wait after the first failed send; it doubles per
	// failure up to MaxBackoff. Defaults 5s and 5m.
	BaseBackoff, MaxBackoff time.Duration
	// Lease is how long a flusher holds a page while sending. Default 30s.
	Lease time.Duration
	// Logger receives one line per failed send. Default: discard.
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Validate reports every problem with c at once.
func (c OutboxConfig) Validate() error {
	var errs []error
	if c.DB == nil {
		errs = append(errs, errors.New("DB is nil"))
	}
	if c.Table == "" {
		errs = append(errs, errors.New("Table is empty"))
	}
	if c.BaseBackoff < 0 || c.MaxBackoff < 0 || c.Lease < 0 {
		errs = append(errs, errors.New("BaseBackoff, MaxBackoff and Lease must not be negative"))
	}
	if c.BaseBackoff > 0 && c.MaxBackoff > 0 && c.MaxBackoff < c.BaseBackoff {
		errs = append(errs, errors.New("MaxBackoff is below BaseBackoff"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
	}
	return nil
}

// Outbox is a durable queue of pages in DynamoDB. It is safe for
// concurrent use, also from several processes.
type Outbox struct {
	db        DB
	table     string
	sender    Sender
	base, max time.Duration
	lease     time.Duration
	log       *slog.Logger
	now       func() time.Time
}

// NewOutbox returns an outbox for cfg.
func NewOutbox(cfg OutboxConfig) (*Outbox, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := &Outbox{db: cfg.DB, table: cfg.Table, sender: cfg.Sender,
		base: cfg.BaseBackoff, max: cfg.MaxBackoff, lease: cfg.Lease, log: cfg.Logger, now: cfg.Now}
	if o.base == 0 {
		o.base = 5 * time.Second
	}
	if o.max == 0 {
		o.max = 5 * time.Minute
	}
	if o.max < o.base {
		o.max = o.base
	}
	if o.lease == 0 {
		o.lease = 30 * time.Second
	}
	if o.log == nil {
		o.log = slog.New(slog.DiscardHandler)
	}
	if o.now == nil {
		o.now = time.Now
	}
	return o, nil
}

// Page is one outbox entry.
type Page struct {
	DedupKey      string
	Status        string
	Event         Event
	Attempts      int
	CreatedAt     time.Time
	NextAttemptAt time.Time
	SentAt        time.Time
	// LastError is the last failure's text (status code and PagerDuty's
	// message; never the routing key).
	LastError string
}

// pageItem is the stored form of a [Page].
type pageItem struct {
	PK            string `dynamodbav:"pk"`
	SK            string `dynamodbav:"sk"`
	GSI1PK        string `dynamodbav:"gsi1pk"`
	GSI1SK        string `dynamodbav:"gsi1sk"`
	DedupKey      string `dynamodbav:"dedup_key"`
	Status        string `dynamodbav:"status"`
	Event         string `dynamodbav:"event"`
	Attempts      int    `dynamodbav:"attempts"`
	CreatedAt     string `dynamodbav:"created_at"`
	NextAttemptAt string `dynamodbav:"next_attempt_at"`
	SentAt        string `dynamodbav:"sent_at,omitempty"`
	LastError     string `dynamodbav:"last_error,omitempty"`
	LeaseUntil    string `dynamodbav:"lease_until,omitempty"`
	LeaseOwner    string `dynamodbav:"lease_owner,omitempty"`
}

// EnqueueItem returns the outbox Put for ev as a transaction item, for the
// caller's own TransactWriteItems. The Put is conditioned on
// attribute_not_exists(pk): a second enqueue of the same dedup key cancels
// the transaction with ConditionalCheckFailed on this item.
func (o *Outbox) EnqueueItem(ev Event, now time.Time) (types.TransactWriteItem, error) {
	put, err := o.put(ev, now)
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	return types.TransactWriteItem{Put: &types.Put{
		TableName:           put.TableName,
		Item:                put.Item,
		ConditionExpression: put.ConditionExpression,
	}}, nil
}

// Enqueue writes ev to the outbox on its own. It reports false when a page
// with the same dedup key was already enqueued (which is not an error).
func (o *Outbox) Enqueue(ctx context.Context, ev Event) (bool, error) {
	put, err := o.put(ev, o.now())
	if err != nil {
		return false, err
	}
	if _, err := o.db.PutItem(ctx, put); err != nil {
		if ddb.ConditionFailed(err) {
			return false, nil
		}
		return false, fmt.Errorf("pager: enqueue page %s: %w", ev.DedupKey, err)
	}
	return true, nil
}

func (o *Outbox) put(ev Event, now time.Time) (*dynamodb.PutItemInput, error) {
	if err := ev.Validate(); err != nil {
		return nil, err
	}
	raw, err := json.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("pager: encode page %s: %w", ev.DedupKey, err)
	}
	created := ddb.Stamp(now)
	item, err := attributevalue.MarshalMap(pageItem{
		PK: pagePK(ev.DedupKey), SK: skPage,
		GSI1PK: statusPartition(StatusPending), GSI1SK: statusSK(created, ev.DedupKey),
		DedupKey: ev.DedupKey, Status: StatusPending, Event: string(raw),
		CreatedAt: created, NextAttemptAt: created,
	})
	if err != nil {
		return nil, fmt.Errorf("pager: encode page %s: %w", ev.DedupKey, err)
	}
	return &dynamodb.PutItemInput{
		TableName:           aws.String(o.table),
		Item:                item,
		ConditionExpression: aws.String("attribute_not_exists(pk)"),
	}, nil
}

// FlushResult counts what one [Outbox.Flush] did.
type FlushResult struct {
	Sent    int // delivered and marked sent
	Retried int // failed, rescheduled with backoff
	Failed  int // rejected for good (marked failed)
	Skipped int // not due yet, or held by another flusher
}

// Flush sends every due pending page once. Pages whose send fails with a
// retriable error stay pending with a later next attempt; pages PagerDuty
// rejects for good are marked failed. The error reports storage failures
// only; a failed send is counted, not returned.
func (o *Outbox) Flush(ctx context.Context) (FlushResult, error) {
	var res FlushResult
	if o.sender == nil {
		return res, ErrNoSender
	}
	pages, err := o.list(ctx, StatusPending, 0, true)
	if err != nil {
		return res, err
	}
	var errs []error
	for _, p := range pages {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if err := o.flushOne(ctx, p, &res); err != nil {
			errs = append(errs, err)
		}
	}
	return res, errors.Join(errs...)
}

// FlushKeys sends the pending pages with the given dedup keys, as
// [Outbox.Flush] does, reading each by its key instead of listing every
// pending page: a caller that enqueued pages flushes just those, at a
// cost that does not grow with the outbox. Keys of pages already sent, or
// absent, are skipped.
func (o *Outbox) FlushKeys(ctx context.Context, keys []string) (FlushResult, error) {
	var res FlushResult
	if o.sender == nil {
		return res, ErrNoSender
	}
	var errs []error
	for _, k := range keys {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		p, err := o.Get(ctx, k)
		if errors.Is(err, ErrNotFound) {
			res.Skipped++
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if p.Status != StatusPending {
			res.Skipped++
			continue
		}
		if err := o.flushOne(ctx, p, &res); err != nil {
			errs = append(errs, err)
		}
	}
	return res, errors.Join(errs...)
}

func (o *Outbox) flushOne(ctx context.Context, p Page, res *FlushResult) error {
	now := o.now()
	if p.NextAttemptAt.After(now) {
		res.Skipped++
		return nil
	}
	token, ok, err := o.claim(ctx, p.DedupKey, now)
	if err != nil {
		return err
	}
	if !ok {
		res.Skipped++
		return nil
	}
	sendErr := o.sender.Send(ctx, p.Event)
	switch {
	case sendErr == nil:
		res.Sent++
		return o.markSent(ctx, p, token)
	case IsRetriable(sendErr):
		res.Retried++
		wait := o.backoff(p.Attempts + 1)
		var se *SendError
		if errors.As(sendErr, &se) && se.RetryAfter > wait {
			wait = se.RetryAfter
		}
		o.log.WarnContext(ctx, "page send failed, will retry", "dedup_key", p.DedupKey,
			"attempt", p.Attempts+1, "wait", wait, "error", sendErr)
		return o.markRetry(ctx, p, token, o.now().Add(wait), sendErr)
	default:
		res.Failed++
		o.log.ErrorContext(ctx, "page rejected", "dedup_key", p.DedupKey, "err", sendErr)
		return o.markFailed(ctx, p, token, sendErr)
	}
}

// backoff is the wait after the given number of failed attempts.
func (o *Outbox) backoff(attempts int) time.Duration {
	d := o.base
	for i := 1; i < attempts && d < o.max; i++ {
		d *= 2
	}
	return min(d, o.max)
}

// Releasing a lease sets lease_until to "" (which sorts before any time)
// rather than removing it: the embedded DynamoDB ignores REMOVE in updates.

// claim takes the send lease on a due pending page. It reports false when
// the page is no longer pending, not due, or held by another flusher.
func (o *Outbox) claim(ctx context.Context, dedupKey string, now time.Time) (string, bool, error) {
	token := newToken()
	cond := expression.Name("status").Equal(expression.Value(StatusPending)).
		And(expression.Name("next_attempt_at").LessThanEqual(expression.Value(ddb.Stamp(now)))).
		And(expression.Or(
			expression.AttributeNotExists(expression.Name("lease_until")),
			expression.Name("lease_until").LessThan(expression.Value(ddb.Stamp(now)))))
	upd := expression.Set(expression.Name("lease_until"), expression.Value(ddb.Stamp(now.Add(o.lease)))).
		Set(expression.Name("lease_owner"), expression.Value(token))
	if err := o.update(ctx, dedupKey, upd, cond); err != nil {
		if ddb.ConditionFailed(err) {
			return "", false, nil
		}
		return "", false, fmt.Errorf("pager: claim page %s: %w", dedupKey, err)
	}
	return token, true, nil
}

func leaseHeld(token string) expression.ConditionBuilder {
	return expression.Name("status").Equal(expression.Value(StatusPending)).
		And(expression.Name("lease_owner").Equal(expression.Value(token)))
}

// markSent moves a page to sent, conditioned on still holding its lease.
func (o *Outbox) markSent(ctx context.Context, p Page, token string) error {
	sent := ddb.Stamp(o.now())
	upd := expression.Set(expression.Name("status"), expression.Value(StatusSent)).
		Set(expression.Name("sent_at"), expression.Value(sent)).
		Set(expression.Name("gsi1pk"), expression.Value(statusPartition(StatusSent))).
		Set(expression.Name("gsi1sk"), expression.Value(statusSK(sent, p.DedupKey))).
		Add(expression.Name("attempts"), expression.Value(1)).
		Set(expression.Name("lease_until"), expression.Value("")).Set(expression.Name("lease_owner"), expression.Value(""))
	if err := o.update(ctx, p.DedupKey, upd, leaseHeld(token)); err != nil {
		return fmt.Errorf("pager: mark page %s sent: %w", p.DedupKey, err)
	}
	return nil
}

func (o *Outbox) markRetry(ctx context.Context, p Page, token string, next time.Time, cause error) error {
	upd := expression.Set(expression.Name("next_attempt_at"), expression.Value(ddb.Stamp(next))).
		Set(expression.Name("last_error"), expression.Value(cause.Error())).
		Add(expression.Name("attempts"), expression.Value(1)).
		Set(expression.Name("lease_until"), expression.Value("")).Set(expression.Name("lease_owner"), expression.Value(""))
	if err := o.update(ctx, p.DedupKey, upd, leaseHeld(token)); err != nil {
		return fmt.Errorf("pager: reschedule page %s: %w", p.DedupKey, err)
	}
	return nil
}

func (o *Outbox) markFailed(ctx context.Context, p Page, token string, cause error) error {
	now := ddb.Stamp(o.now())
	upd := expression.Set(expression.Name("status"), expression.Value(StatusFailed)).
		Set(expression.Name("last_error"), expression.Value(cause.Error())).
		Set(expression.Name("gsi1pk"), expression.Value(statusPartition(StatusFailed))).
		Set(expression.Name("gsi1sk"), expression.Value(statusSK(now, p.DedupKey))).
		Add(expression.Name("attempts"), expression.Value(1)).
		Set(expression.Name("lease_until"), expression.Value("")).Set(expression.Name("lease_owner"), expression.Value(""))
	if err := o.update(ctx, p.DedupKey, upd, leaseHeld(token)); err != nil {
		return fmt.Errorf("pager: mark page %s failed: %w", p.DedupKey, err)
	}
	return nil
}

func (o *Outbox) update(ctx context.Context, dedupKey string, upd expression.UpdateBuilder, cond expression.ConditionBuilder) error {
	expr, err := expression.NewBuilder().WithUpdate(upd).WithCondition(cond).Build()
	if err != nil {
		return err
	}
	_, err = o.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(o.table),
		Key:                       pageKey(dedupKey),
		UpdateExpression:          expr.Update(),
		ConditionExpression:       expr.Condition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	})
	return err
}

// Pending lists the pages not yet delivered, oldest first.
func (o *Outbox) Pending(ctx context.Context) ([]Page, error) {
	return o.list(ctx, StatusPending, 0, true)
}

// Sent lists delivered pages, newest first; limit 0 means all.
func (o *Outbox) Sent(ctx context.Context, limit int) ([]Page, error) {
	return o.list(ctx, StatusSent, limit, false)
}

// Failed lists pages PagerDuty rejected for good, newest first. They need
// an operator: fix the routing key or payload and enqueue a new page.
func (o *Outbox) Failed(ctx context.Context) ([]Page, error) {
	return o.list(ctx, StatusFailed, 0, false)
}

// Get returns the page with the given dedup key, or [ErrNotFound].
func (o *Outbox) Get(ctx context.Context, dedupKey string) (Page, error) {
	pi, found, err := ddb.Get[pageItem](ctx, o.db, &dynamodb.GetItemInput{
		TableName: aws.String(o.table), Key: pageKey(dedupKey), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Page{}, fmt.Errorf("pager: get page %s: %w", dedupKey, err)
	}
	if !found {
		return Page{}, fmt.Errorf("pager: page %s: %w", dedupKey, ErrNotFound)
	}
	return decodePage(pi)
}

func (o *Outbox) list(ctx context.Context, status string, limit int, oldestFirst bool) ([]Page, error) {
	keyCond := expression.Key("gsi1pk").Equal(expression.Value(statusPartition(status)))
	expr, err := expression.NewBuilder().WithKeyCondition(keyCond).Build()
	if err != nil {
		return nil, err
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(o.table),
		IndexName:                 aws.String(indexName),
		KeyConditionExpression:    expr.KeyCondition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		ScanIndexForward:          aws.Bool(oldestFirst),
	}
	var pages []Page
	err = ddb.QueryEach(ctx, o.db, in, func(pi pageItem) (bool, error) {
		p, err := decodePage(pi)
		if err != nil {
			return false, err
		}
		pages = append(pages, p)
		return limit == 0 || len(pages) < limit, nil
	})
	if err != nil {
		return nil, fmt.Errorf("pager: list %s pages: %w", status, err)
	}
	return pages, nil
}

func decodePage(pi pageItem) (Page, error) {
	p := Page{DedupKey: pi.DedupKey, Status: pi.Status, Attempts: pi.Attempts, LastError: pi.LastError,
		CreatedAt: ddb.ParseStamp(pi.CreatedAt), NextAttemptAt: ddb.ParseStamp(pi.NextAttemptAt), SentAt: ddb.ParseStamp(pi.SentAt)}
	if err := json.Unmarshal([]byte(pi.Event), &p.Event); err != nil {
		return Page{}, fmt.Errorf("pager: decode page %s: %w", pi.DedupKey, err)
	}
	return p, nil
}

func newToken() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
