package lambdalocal

import (
	"context"
	"crypto/rand"
	"encoding/hex"
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
// timeout from now.
func InvokeContext(parent context.Context, function string, timeout time.Duration) (context.Context, context.CancelFunc) {
	lc := &lambdacontext.LambdaContext{
		AwsRequestID:       NewRequestID(),
		InvokedFunctionArn: "arn:aws:lambda:us-east-1:" + LocalAccountID + ":function:" + function,
	}
	ctx := lambdacontext.NewContext(parent, lc)
	return context.WithTimeout(ctx, timeout)
}

// runWithDeadline runs fn and reports whether it finished before ctx's
// deadline. Like Lambda, an overrun is a failure whatever fn returns later.
func runWithDeadline(ctx context.Context, fn func()) bool {
	done := make(chan struct{})
	environments.run(func() {
		defer close(done)
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
