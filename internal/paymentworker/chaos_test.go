package paymentworker_test

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/paymentworker"
	"github.com/hookline/hookline/internal/testkit"
	"github.com/hookline/hookline/pkg/idempotency"
	"github.com/hookline/hookline/pkg/provider"
)

// crashKey carries an invocation's crash switch in its context.
type crashKey struct{}

// crash is one invocation's switch: firing it makes the invocation fail as
// a whole, as when the Lambda process dies.
type crash struct {
	once sync.Once
	ch   chan struct{}
	// ended is closed when the invocation ends (its deadline).
	ended <-chan struct{}
}

func (c *crash) fire() { c.once.Do(func() { close(c.ch) }) }

func (c *crash) fired() bool {
	select {
	case <-c.ch:
		return true
	default:
		return false
	}
}

var errCrashed = errors.New("worker process crashed")

// crashingHandler runs the worker so that a step may kill the whole
// invocation: the batch fails, nothing is deleted, and the goroutine that
// crashed does nothing more. Others see their context cancelled.
func crashingHandler(w *paymentworker.Worker) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		c := &crash{ch: make(chan struct{}), ended: ctx.Done()}
		ctx, cancel := context.WithCancel(context.WithValue(ctx, crashKey{}, c))
		defer cancel()
		type result struct {
			resp events.SQSEventResponse
			err  error
		}
		done := make(chan result, 1)
		go func() {
			resp, err := w.Handle(ctx, ev)
			done <- result{resp, err}
		}()
		select {
		case r := <-done:
			if c.fired() {
				return events.SQSEventResponse{}, errCrashed
			}
			return r.resp, r.err
		case <-c.ch:
			return events.SQSEventResponse{}, errCrashed
		}
	}
}

// chaosCounts counts the worker faults that fired.
type chaosCounts struct {
	crashes, stalls, dynamoErrors atomic.Int64
}

// chaos decides, for each step of the worker, whether the process crashes
// before or after it, or stalls in it past the invocation's deadline.
type chaos struct {
	d              *testkit.Dice
	crashes, stall float64
	counts         *chaosCounts
}

// step runs call as the named step of key's processing, with the faults
// the dice decide.
func (c *chaos) step(ctx context.Context, key, name string, call func()) {
	n := c.d.Next(key + "/" + name)
	u := c.d.Roll("step", key, name, strconv.Itoa(n))
	switch {
	case u < c.crashes/2:
		c.die(ctx)
	case u < c.crashes/2+c.stall:
		c.hang(ctx)
	}
	call()
	if u >= 1-c.crashes/2 {
		c.die(ctx)
	}
}

// hang blocks until the invocation ctx belongs to times out, which fails
// its whole batch, and ends the calling goroutine. (ctx itself may be a
// provider call's, with an earlier deadline: the invocation's is the one
// that counts.)
func (c *chaos) hang(ctx context.Context) {
	c.counts.stalls.Add(1)
	if cr, ok := ctx.Value(crashKey{}).(*crash); ok {
		<-cr.ended
		cr.fire()
	}
	runtime.Goexit()
}

// die crashes the invocation ctx belongs to and ends the calling goroutine.
func (c *chaos) die(ctx context.Context) {
	c.counts.crashes.Add(1)
	if cr, ok := ctx.Value(crashKey{}).(*crash); ok {
		cr.fire()
	}
	runtime.Goexit()
}

// chaosRegistry is the registry with worker faults around every call.
type chaosRegistry struct {
	paymentworker.Registry
	c *chaos
	// settled records keys known to be completed.
	settled *sync.Map
}

func (r chaosRegistry) Claim(ctx context.Context, key, hash string) (idempotency.Claim, error) {
	var cl idempotency.Claim
	var err error
	r.c.step(ctx, key, "claim", func() { cl, err = r.Registry.Claim(ctx, key, hash) })
	if err == nil && cl.Status == idempotency.StatusAlreadyCompleted {
		r.settled.Store(key, true)
	}
	return cl, err
}

func (r chaosRegistry) Complete(ctx context.Context, key, token string, result []byte) error {
	var err error
	r.c.step(ctx, key, "complete", func() { err = r.Registry.Complete(ctx, key, token, result) })
	if err == nil {
		r.settled.Store(key, true)
	}
	return err
}

func (r chaosRegistry) CompleteFor(ctx context.Context, key, token string, result []byte, keep time.Duration) error {
	var err error
	r.c.step(ctx, key, "complete", func() { err = r.Registry.CompleteFor(ctx, key, token, result, keep) })
	if err == nil {
		r.settled.Store(key, true)
	}
	return err
}

func (r chaosRegistry) Release(ctx context.Context, key, token string, at time.Time) error {
	var err error
	r.c.step(ctx, key, "release", func() { err = r.Registry.Release(ctx, key, token, at) })
	return err
}

// chaosCharger is the provider client with worker faults around every
// call.
type chaosCharger struct {
	paymentworker.Charger
	c *chaos
}

func (p chaosCharger) CreateCharge(ctx context.Context, key string, req provider.ChargeRequest) provider.Result {
	var res provider.Result
	p.c.step(ctx, req.EventID, "charge", func() { res = p.Charger.CreateCharge(ctx, key, req) })
	return res
}

func (p chaosCharger) LookupCharge(ctx context.Context, key string) (*provider.Charge, bool, error) {
	var (
		ch    *provider.Charge
		found bool
		err   error
	)
	p.c.step(ctx, key, "lookup", func() { ch, found, err = p.Charger.LookupCharge(ctx, key) })
	return ch, found, err
}

// flakyDynamo fails a share of DynamoDB calls: half before the call (a
// throttle), half after it was applied (the answer is lost).
type flakyDynamo struct {
	idempotency.DynamoDBAPI
	d      *testkit.Dice
	rate   float64
	counts *chaosCounts
}

var errThrottled = errors.New("ThrottlingException: injected")

// fail decides the fate of one call on the item pk.
func (f flakyDynamo) fail(op string, key map[string]ddbtypes.AttributeValue) (before, after bool) {
	pk := ""
	if v, ok := key["pk"].(*ddbtypes.AttributeValueMemberS); ok {
		pk = v.Value
	}
	u := f.d.Roll("dynamo", op, pk, strconv.Itoa(f.d.Next("dynamo/"+op+"/"+pk)))
	before, after = u < f.rate/2, u >= f.rate/2 && u < f.rate
	if before || after {
		f.counts.dynamoErrors.Add(1)
	}
	return before, after
}

func (f flakyDynamo) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	before, after := f.fail("put", in.Item)
	if before {
		return nil, errThrottled
	}
	out, err := f.DynamoDBAPI.PutItem(ctx, in, o...)
	if after && err == nil {
		return nil, errThrottled
	}
	return out, err
}

func (f flakyDynamo) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if before, _ := f.fail("get", in.Key); before {
		return nil, errThrottled
	}
	return f.DynamoDBAPI.GetItem(ctx, in, o...)
}

func (f flakyDynamo) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	before, after := f.fail("update", in.Key)
	if before {
		return nil, errThrottled
	}
	out, err := f.DynamoDBAPI.UpdateItem(ctx, in, o...)
	if after && err == nil {
		return nil, errThrottled
	}
	return out, err
}
