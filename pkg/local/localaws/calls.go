package localaws

import (
	"context"
	"sync"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
)

// Calls counts the AWS API calls made through an Env's clients, by service
// and operation, so tests and benchmarks can state calls per event.
type Calls struct {
	mu     sync.Mutex
	counts map[string]int64 // "DynamoDB.PutItem"
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

// middleware counts each operation once, before retries.
func (c *Calls) middleware(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("hooklineCountCalls",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			c.add(awsmiddleware.GetServiceID(ctx), awsmiddleware.GetOperationName(ctx))
			return next.HandleInitialize(ctx, in)
		}), middleware.After)
}
