package localaws

import (
	"context"
	"sync"
	"sync/atomic"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
)

// Calls counts the AWS API calls made through an Env's clients, by service
// and operation, so tests and benchmarks can state calls per event.
type Calls struct {
	mu     sync.Mutex
	counts map[string]int64 // "DynamoDB.PutItem"
	tap    atomic.Pointer[func(Call)]
}

// Call is one AWS call as a tap sees it: the operation, the context it
// was made with and its input (*dynamodb.PutItemInput, ...).
type Call struct {
	Service, Operation string
	Context            context.Context
	Input              any
}

// Tap hands f every call made through the Env's clients from now until
// stop is called, before the call is sent. f runs on the caller's
// goroutine and must not block. One tap at a time: a second replaces the
// first.
func (c *Calls) Tap(f func(Call)) (stop func()) {
	c.tap.Store(&f)
	return func() { c.tap.CompareAndSwap(&f, nil) }
}

// Snapshot returns a copy of the counts.
func (c *Calls) Snapshot() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int64, len(c.counts))
	for k, v := range c.counts {
		out[k] = v
	}
	return out
}

// Service sums the counts of one service ("DynamoDB", "SQS").
func (c *Calls) Service(name string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for k, v := range c.counts {
		if len(k) > len(name) && k[:len(name)] == name && k[len(name)] == '.' {
			n += v
		}
	}
	return n
}

func (c *Calls) add(service, op string) {
	c.mu.Lock()
	if c.counts == nil {
		c.counts = map[string]int64{}
	}
	c.counts[service+"."+op]++
	c.mu.Unlock()
}

// middleware counts each operation once, before retries, and hands it
// to the tap if there is one.
func (c *Calls) middleware(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("hooklineCountCalls",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			service, op := awsmiddleware.GetServiceID(ctx), awsmiddleware.GetOperationName(ctx)
			c.add(service, op)
			if tap := c.tap.Load(); tap != nil {
				(*tap)(Call{Service: service, Operation: op, Context: ctx, Input: in.Parameters})
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.After)
}
