package lambdalocal

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"runtime/pprof"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

// LocalAccountID is the AWS account of local events and ARNs: the one the
// SQS emulator puts in its queue URLs and ARNs.
const LocalAccountID = "123456789012"

// localAPIID is the HTTP API's ID in local request contexts.
const localAPIID = "local"

// NewRequestID returns a random Lambda-style request ID.
func NewRequestID() string {
	var b [16]byte
	rand.Read(b[:])
	s := hex.EncodeToString(b[:])
	return s[:8] + "-" + s[8:12] + "-" + s[12:16] + "-" + s[16:20] + "-" + s[20:]
}

// InvokeContext returns a context like the one Lambda hands a handler: it
// carries a request ID and function ARN (lambdacontext) and a deadline of
// timeout from now. It also carries the profiler label
// [FunctionLabel]=function, which the invocation's goroutine wears while
// it runs, so that a CPU profile tells each function's time apart.
func InvokeContext(parent context.Context, function string, timeout time.Duration) (context.Context, context.CancelFunc) {
	lc := &lambdacontext.LambdaContext{
		AwsRequestID:       NewRequestID(),
		InvokedFunctionArn: "arn:aws:lambda:us-east-1:" + LocalAccountID + ":function:" + function,
	}
	ctx := lambdacontext.NewContext(pprof.WithLabels(parent, pprof.Labels(FunctionLabel, function)), lc)
	return context.WithTimeout(ctx, timeout)
}

// FunctionLabel is the profiler label (runtime/pprof) that names the
// function an invocation's goroutine runs.
const FunctionLabel = "function"

// PartLabel is the profiler label of goroutines that work for the local
// AWS services rather than for a function: PartEventSource on an SQS
// event source's pollers.
const PartLabel, PartEventSource = "part", "event-source"

// runWithDeadline runs fn and reports whether it finished before ctx's
// deadline. Like Lambda, an overrun is a failure whatever fn returns later.
func runWithDeadline(ctx context.Context, fn func()) bool {
	done := make(chan struct{})
	environments.run(func() {
		defer close(done)
		// The goroutine is reused, and may have been started by another
		// function's caller: it wears this invocation's labels alone.
		pprof.SetGoroutineLabels(ctx)
		fn()
	})
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// environments are the goroutines that run invocations. Lambda runs one
// environment's invocations one after another on the same runtime loop;
// likewise a goroutine here takes the next invocation when it finishes
// one, so that each invocation does not start on a fresh stack and grow
// it again through the AWS SDK's deep call chains (that growth cost the
// local payment path about 4% of its CPU).
var environments = &pool{work: make(chan func()), idle: 30 * time.Second}

// pool runs functions on goroutines it keeps while they are busy within
// idle of each other.
type pool struct {
	work chan func()
	idle time.Duration
	live atomic.Int64 // goroutines kept now
}

// run hands fn to an idle goroutine, or starts one.
func (p *pool) run(fn func()) {
	select {
	case p.work <- fn:
	default:
		p.live.Add(1)
		go p.loop(fn)
	}
}

func (p *pool) loop(fn func()) {
	defer p.live.Add(-1)
	t := time.NewTimer(p.idle)
	defer t.Stop()
	for {
		fn()
		t.Reset(p.idle)
		select {
		case fn = <-p.work:
		case <-t.C:
			return
		}
	}
}
