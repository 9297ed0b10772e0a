package lab

import (
	"context"
	"errors"
	"fmt"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookline/hookline/internal/ddb"
	"github.com/hookline/hookline/internal/dev/lambdalocal"
	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/dev/localrun"
	"github.com/hookline/hookline/internal/intake"
)

// BareCeiling is the bare pipeline's saturated rate on env: the AWS calls
// of the full path and nothing else. It replays sc, the calls one probe
// event made, for n events of its own: the same requests, items and
// expressions, with no HTTP, no Lambda adapters, no provider and none of
// the functions' code. Intake is 32 goroutines, each replaying the
// receiver's calls for one event at a time into a queue of the bare
// pipeline's own, as the full path's 32 connections send; pollers (as many
// as the full path's event source has) receive batches of 10, replay the
// worker's calls for a batch's messages at once, as the worker handles a
// batch's records, and delete in batches. It is timed from the first
// intake to the last delete; each event's inputs are made before.
func BareCeiling(ctx context.Context, env *localaws.Env, sc Script, n, pollers int) (float64, error) {
	return bareCeiling(ctx, env, sc, n, pollers, nil)
}

// bareCeiling is BareCeiling, with m (if not nil) measuring where the CPU
// goes while the clock runs.
func bareCeiling(ctx context.Context, env *localaws.Env, sc Script, n, pollers int, m *cpuMeter) (float64, error) {
	q, err := env.SQS.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("lab-bare-" + newRun())})
	if err != nil {
		return 0, fmt.Errorf("lab: bare queue: %w", err)
	}
	b := &bare{env: env, sqs: ownConnections(env.SQS), sc: sc, url: aws.ToString(q.QueueUrl), run: newRun()}
	b.prepare(n)
	m.begin()
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	pprof.Do(ctx, pprof.Labels(localrun.PartLabel, partBare), func(ctx context.Context) {
		for range max(pollers, 1) {
			wg.Go(func() { b.consume(ctx, n) })
		}
		b.produce(ctx, n)
		wg.Wait()
	})
	elapsed := time.Since(start)
	m.end(n)
	if err := b.failure(); err != nil {
		return 0, err
	}
	if int(b.done.Load()) < n {
		return 0, errors.New("lab: the bare pipeline did not finish within 5 minutes")
	}
	return float64(n) / elapsed.Seconds(), nil
}

// ownConnections is c with the same settings and a connection pool of its
// own, so that a CPU profile does not count the bare pipeline's SQS calls
// as the functions' (a connection's goroutines wear the labels of the call
// that opened it).
func ownConnections(c *sqs.Client) *sqs.Client {
	opts := c.Options()
	if bc, ok := opts.HTTPClient.(*awshttp.BuildableClient); ok {
		opts.HTTPClient = bc.WithTransportOptions() // a clone of its transport
	}
	return sqs.New(opts)
}

type bare struct {
	env            *localaws.Env
	sqs            *sqs.Client
	sc             Script
	url            string
	run            string
	intake, worker [][]any // each event's inputs, made before the clock starts
	done           atomic.Int64
	mu             sync.Mutex
	err            error // the first replayed call that failed
}

// prepare makes each event's inputs from the script's, so that the
// timed run makes AWS calls and nothing else.
func (b *bare) prepare(n int) {
	b.intake, b.worker = make([][]any, n), make([][]any, n)
	shard, source, sharded := probeShard(b.sc)
	for i := range n {
		id := eventID(b.run, i)
		pairs := []string{b.sc.id, id}
		if sharded {
			// Each event's record goes to its own partition of the
			// replay index, as each of the full path's does.
			pairs = append([]string{shard, intake.ShardKey(source, id)}, pairs...)
		}
		r := strings.NewReplacer(pairs...)
		for _, in := range b.sc.intake {
			b.intake[i] = append(b.intake[i], rewrite(in, r))
		}
		for _, in := range b.sc.worker {
			b.worker[i] = append(b.worker[i], rewrite(in, r))
		}
	}
}

// probeShard finds the replay-index partition of the probe's intake
// record, and its source.
func probeShard(sc Script) (shard, source string, ok bool) {
	for _, in := range sc.intake {
		put, isPut := in.(*dynamodb.PutItemInput)
		if !isPut {
			continue
		}
		if v, isStr := put.Item["source_shard"].(*ddbtypes.AttributeValueMemberS); isStr {
			source, _, _ = strings.Cut(v.Value, "#")
			return v.Value, source, true
		}
	}
	return "", "", false
}

// replay makes the calls of one side of one event.
func (b *bare) replay(ctx context.Context, calls []any) {
	for _, in := range calls {
		if err := b.call(ctx, in); err != nil {
			b.fail(err)
			return
		}
	}
}

// call makes one recorded call, again while it fails for a reason a
// retry cures (a throttle or a 5xx the SDK's own attempts did not
// outlast), up to bareAttempts times: the bare pipeline's rate is then
// bounded by the same partition limits as the full path's.
func (b *bare) call(ctx context.Context, in any) error {
	var err error
	for i := range bareAttempts {
		if err = b.callOnce(ctx, in); err == nil || !retryable(err) || ctx.Err() != nil {
			return err
		}
		time.Sleep(min(time.Duration(10<<i)*time.Millisecond, 200*time.Millisecond))
	}
	return err
}

// bareAttempts bounds [bare.call]'s retries: enough that injected AWS
// faults (HOOKLINE_LOCAL_AWS_FAULTS) do not end the bare pipeline, whose
// calls have no provider to retry them.
const bareAttempts = 10

// retryable reports whether the SDK itself would have retried err.
func retryable(err error) bool {
	return retry.IsErrorRetryables(retry.DefaultRetryables).IsErrorRetryable(err) == aws.TrueTernary
}

// callOnce makes one recorded call; a message goes to the bare queue.
func (b *bare) callOnce(ctx context.Context, in any) error {
	var err error
	switch in := in.(type) {
	case *dynamodb.PutItemInput:
		_, err = b.env.DynamoDB.PutItem(ctx, in)
	case *dynamodb.UpdateItemInput:
		_, err = b.env.DynamoDB.UpdateItem(ctx, in)
	case *dynamodb.GetItemInput:
		_, err = b.env.DynamoDB.GetItem(ctx, in)
	case *dynamodb.DeleteItemInput:
		_, err = b.env.DynamoDB.DeleteItem(ctx, in)
	case *dynamodb.QueryInput:
		_, err = b.env.DynamoDB.Query(ctx, in)
	case *dynamodb.TransactWriteItemsInput:
		_, err = b.env.DynamoDB.TransactWriteItems(ctx, in)
	case *sqs.SendMessageInput:
		in.QueueUrl = aws.String(b.url)
		_, err = b.sqs.SendMessage(ctx, in)
	default:
		return fmt.Errorf("lab: the bare pipeline cannot replay a %T", in)
	}
	if ddb.ConditionFailed(err) {
		// Each replay writes keys of its own, so a condition can only
		// fail on this call's own write: a retry, by the SDK, of an
		// attempt that committed and answered 500 (local AWS faults).
		return nil
	}
	if err != nil {
		return fmt.Errorf("lab: bare replay of a %T: %w", in, err)
	}
	return nil
}

func (b *bare) fail(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err == nil {
		b.err = err
	}
}

func (b *bare) failure() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// produce is the intake.
func (b *bare) produce(ctx context.Context, n int) {
	ids := make(chan int)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for i := range ids {
				b.replay(ctx, b.intake[i])
			}
		})
	}
	for i := range n {
		ids <- i
	}
	close(ids)
	wg.Wait()
}

// consume is the worker. It short-polls and pauses 5 ms when the queue is
// empty, and asks for as many messages as its last receive found, as the
// local event source does: local-aws-sqs answers a long poll only when its
// wait ends, and a short poll for more messages than it holds only after
// 40 ms, so either would charge the bare pipeline waits the full path
// never has, and leave its ceiling short of the machine's.
func (b *bare) consume(ctx context.Context, n int) {
	ask := lambdalocal.NewBatchAsk(10)
	for int(b.done.Load()) < n && ctx.Err() == nil && b.failure() == nil {
		asked := ask.Next()
		out, err := b.sqs.ReceiveMessage(ctx, lambdalocal.ReceiveInput(b.url, asked))
		if err == nil {
			ask.Got(asked, len(out.Messages))
		}
		if err != nil || len(out.Messages) == 0 {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		var del []sqstypes.DeleteMessageBatchRequestEntry
		var batch sync.WaitGroup
		for j, m := range out.Messages {
			i, ok := b.eventOf(aws.ToString(m.Body))
			if !ok || i >= len(b.worker) {
				b.fail(fmt.Errorf("lab: a bare message names no bare event: %.80q", aws.ToString(m.Body)))
				return
			}
			batch.Go(func() { b.replay(ctx, b.worker[i]) })
			del = append(del, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(j)), ReceiptHandle: m.ReceiptHandle})
		}
		batch.Wait()
		if _, err := b.sqs.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(b.url), Entries: del}); err == nil {
			b.done.Add(int64(len(del)))
		}
	}
}

// eventOf finds the bare event a message body carries.
func (b *bare) eventOf(body string) (int, bool) {
	prefix := eventID(b.run, 0)
	prefix = prefix[:len(prefix)-8]
	k := strings.Index(body, prefix)
	if k < 0 || len(body) < k+len(prefix)+8 {
		return 0, false
	}
	i, err := strconv.Atoi(body[k+len(prefix) : k+len(prefix)+8])
	return i, err == nil
}
