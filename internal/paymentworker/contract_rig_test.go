package paymentworker_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/internal/paymentworker"
	"github.com/hookline/hookline/internal/paymentworker/paymentworkertest"
	"github.com/hookline/hookline/pkg/idempotency"
	"github.com/hookline/hookline/pkg/provider"
)

// contractRig drives the worker one delivery at a time, as the SQS event
// source would, against the simulator running one idempotency profile and
// the idempotency table on the local DynamoDB. Each delivery is a call of
// Handle with the receive count SQS would give; what the worker asks of
// the queue (retry later, dead-letter) is recorded and obeyed.
type contractRig struct {
	env     *localaws.Env
	sim     *providersim.Sim
	client  *provider.Client
	reg     *idempotency.Registry
	store   idempotency.Store
	queue   *paymentworkertest.RecordingQueue
	worker  *paymentworker.Worker
	timeout time.Duration // the function timeout of one delivery
}

// Timings of the contract drills, scaled down from production: the
// provider may commit up to contractCommit after a client gave up, and
// its lookup finds a charge contractLookupLag after the commit.
const (
	contractClientTimeout = 300 * time.Millisecond
	contractCommit        = 1200 * time.Millisecond
	contractLookupLag     = 200 * time.Millisecond
)

func newContractRig(t *testing.T, env *localaws.Env, profile providersim.Profile, simCfg providersim.Config) *contractRig {
	t.Helper()
	simCfg.Profile = profile
	sim, err := providersim.New(simCfg)
	must(t, err)
	must(t, sim.Start())
	t.Cleanup(func() { sim.Close() })
	client, err := provider.New(provider.Config{BaseURL: sim.URL(), Timeout: contractClientTimeout, MaxAttempts: 4, BaseBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
	must(t, err)
	r := &contractRig{env: env, sim: sim, client: client, queue: paymentworkertest.NewRecordingQueue(), timeout: 2 * time.Second}
	store, err := idempotency.NewDynamoDB(idempotency.DynamoDBConfig{Client: env.DynamoDB, Table: env.TableName("IdempotencyTable")})
	must(t, err)
	r.store = store
	r.reg, r.worker = contractWorker(t, store, client, r.queue)
	return r
}

// msg is one SQS copy of a payment event.
func (r *contractRig) msg(eventID, body string, copyN int) events.SQSMessage {
	m := sqsMessage(eventID, body)
	m.MessageId = fmt.Sprintf("m-%s-%d", eventID, copyN)
	m.ReceiptHandle = m.MessageId
	return m
}

// deliver invokes the worker with one record received for the n-th time,
// inside a Lambda context with the rig's timeout, and reports whether the
// record was acknowledged.
func (r *contractRig) deliver(m events.SQSMessage, n int) bool {
	m.Attributes = map[string]string{"ApproximateReceiveCount": strconv.Itoa(n)}
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: m.MessageId})
	resp, err := r.worker.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{m}})
	return err == nil && len(resp.BatchItemFailures) == 0 && ctx.Err() == nil
}

// settle delivers m until it is acknowledged or dead-lettered, waiting
// between deliveries as long as the worker asked (a visibility timeout of
// 1 s otherwise), at most 12 times. It returns how the copy ended.
func (r *contractRig) settle(t *testing.T, m events.SQSMessage) string {
	t.Helper()
	for n := 1; n <= 12; n++ {
		if r.deliver(m, n) {
			if r.queue.DeadLettered(m.MessageId) != "" {
				return "dead_lettered"
			}
			return "acknowledged"
		}
		time.Sleep(min(r.queue.TakeRetryAfter(m.MessageId, time.Second), 3*time.Second))
	}
	t.Fatalf("%s: neither acknowledged nor dead-lettered after 12 deliveries", m.MessageId)
	return ""
}

// status returns the registry record of an event.
func (r *contractRig) status(t *testing.T, eventID string) idempotency.Record {
	t.Helper()
	rec, _, err := r.reg.Status(context.Background(), "payments:"+eventID)
	must(t, err)
	return rec
}

// forEachProfile runs drill against the simulator in every profile, on one
// local AWS, the profiles in parallel: each drill's event IDs name its
// profile, and the rig holds no queue of its own.
func forEachProfile(t *testing.T, drill func(t *testing.T, env *localaws.Env, p providersim.Profile)) {
	env := localaws.StartForTest(t)
	for _, p := range providersim.Profiles {
		t.Run(p.String(), func(t *testing.T) {
			t.Parallel()
			drill(t, env, p)
		})
	}
}

// deliverBatch invokes the worker once with one record per event, each
// received for the n-th time.
func (r *contractRig) deliverBatch(ids []string, n int) {
	ev := events.SQSEvent{}
	for _, id := range ids {
		m := r.msg(id, paymentBody(id, 6100), 1)
		m.Attributes = map[string]string{"ApproximateReceiveCount": strconv.Itoa(n)}
		ev.Records = append(ev.Records, m)
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: "batch"})
	done := make(chan struct{})
	go func() { r.worker.Handle(ctx, ev); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// setupCharge charges through the rig's provider as an earlier build or a
// test's "given" step would, with a timeout a loaded machine cannot
// reach: the rig's own client keeps the drills' scaled-down timeout,
// which is what the drills test, and a setup step that timed out would
// fail a test for a reason it is not about.
func (r *contractRig) setupCharge(t *testing.T, key string, charge provider.ChargeRequest) provider.Result {
	t.Helper()
	c, err := provider.New(provider.Config{BaseURL: r.sim.URL(), Timeout: 10 * time.Second, MaxAttempts: 4, BaseBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
	must(t, err)
	return c.CreateCharge(context.Background(), key, charge)
}
