package intake_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/internal/testkit"
)

// The specification tests run the store on a manual clock: a lease runs
// out when a test moves the clock past it, never while a test sleeps.

// t0 is when every clocked test starts.
var t0 = time.Date(2026, 11, 30, 3, 17, 0, 0, time.UTC)

// specLease is the send lease of the clocked store: the production
// default, since no test waits for it.
const specLease = intake.DefaultLease

// specBusyWait is how long a clocked redelivery waits for a live lease:
// long enough for nothing, so that a live lease is answered ErrBusy at
// once and a lease the clock has passed is taken at once.
const specBusyWait = 10 * time.Millisecond

// clocked is one local AWS and a store over it on a manual clock.
type clocked struct {
	env   *localaws.Env
	clock *testkit.ManualClock
	store *intake.Store
}

// newClocked starts a local AWS with the fault layer f (none when f is
// the zero value) and a store over its intake table at t0.
func newClocked(t *testing.T, f localaws.Faults) *clocked {
	t.Helper()
	var env *localaws.Env
	if f.On() {
		env = localaws.StartFaultsForTest(t, f)
	} else {
		env = localaws.StartForTest(t)
	}
	return clockedOn(t, env)
}

// clockedOn is a store over env's intake table at t0.
func clockedOn(t *testing.T, env *localaws.Env) *clocked {
	t.Helper()
	c := &clocked{env: env, clock: testkit.NewManualClock(t0)}
	c.store = c.storeWith(t, env.SQS)
	return c
}

// startSlow starts the embedded local AWS answering every call after
// latency, so that concurrent calls overlap as they do on AWS.
func startSlow(t *testing.T, latency time.Duration) *localaws.Env {
	t.Helper()
	if localaws.External() {
		t.Skip("latency is injected into the embedded emulators; an AWS_ENDPOINT_URL* is set")
	}
	env, err := localaws.Start(context.Background(), localaws.Options{Latency: latency})
	if err != nil {
		t.Fatalf("start local aws: %v", err)
	}
	t.Cleanup(func() { env.Close() })
	return env
}

// storeWith is another receiver's store over the same table, clock and
// DynamoDB, sending through q.
func (c *clocked) storeWith(t *testing.T, q intake.SQSAPI) *intake.Store {
	t.Helper()
	store, err := intake.New(intake.Config{DynamoDB: c.env.DynamoDB, SQS: q, Table: c.env.TableName("IntakeTable"),
		Lease: specLease, BusyWait: specBusyWait, Now: c.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return store
}

// record reads ev's record, failing the test when there is none.
func (c *clocked) record(t *testing.T, ev intake.Event) intake.Record {
	t.Helper()
	rec, ok, err := c.store.Get(context.Background(), ev.Source, ev.EventID)
	if err != nil || !ok {
		t.Fatalf("intake record of %s: found %v, %v", ev.EventID, ok, err)
	}
	return rec
}

// absent checks that ev left no record.
func (c *clocked) absent(t *testing.T, ev intake.Event) {
	t.Helper()
	rec, ok, err := c.store.Get(context.Background(), ev.Source, ev.EventID)
	if err != nil || ok {
		t.Fatalf("intake record of %s: found %v (%+v), %v; want none", ev.EventID, ok, rec, err)
	}
}

// putItem writes item to the intake table as it stands, the way a build
// other than this one wrote it.
func (c *clocked) putItem(t *testing.T, v any) {
	t.Helper()
	item, err := attributevalue.MarshalMap(v)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.env.DynamoDB.PutItem(context.Background(), &dynamodb.PutItemInput{
		TableName: aws.String(c.env.TableName("IntakeTable")), Item: item}); err != nil {
		t.Fatal(err)
	}
}

// rawItem reads ev's record as DynamoDB holds it.
func (c *clocked) rawItem(t *testing.T, ev intake.Event) map[string]ddbtypes.AttributeValue {
	t.Helper()
	out, err := c.env.DynamoDB.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(c.env.TableName("IntakeTable")), ConsistentRead: aws.Bool(true),
		Key: map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: intake.Key(ev.Source, ev.EventID)}}})
	if err != nil || out.Item == nil {
		t.Fatalf("raw intake item of %s: %v, %v", ev.EventID, out, err)
	}
	return out.Item
}

// stamp is a time as intake records store it.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }
