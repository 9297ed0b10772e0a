package paymentworker_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/internal/paymentworker"
	"github.com/hookline/hookline/internal/paymentworker/paymentworkertest"
	"github.com/hookline/hookline/pkg/idempotency"
	"github.com/hookline/hookline/pkg/provider"
)

// TestHandlesTheSQSBatchFixture: the batch exactly as Lambda's event source
// mapping delivers it (testdata/events/sqs-batch.json, the second record
// on its third receive) charges each event once; the same batch again is
// acknowledged without a second charge.
func TestHandlesTheSQSBatchFixture(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../testdata/events/sqs-batch.json")
	must(t, err)
	var ev events.SQSEvent
	must(t, json.Unmarshal(data, &ev))
	env := localaws.StartForTest(t)
	sim, err := providersim.New(providersim.Config{})
	must(t, err)
	must(t, sim.Start())
	t.Cleanup(func() { sim.Close() })
	client, err := provider.New(provider.Config{BaseURL: sim.URL()})
	must(t, err)
	store, err := idempotency.NewDynamoDB(idempotency.DynamoDBConfig{Client: env.DynamoDB, Table: env.TableName("IdempotencyTable")})
	must(t, err)
	reg, err := idempotency.New(idempotency.Config{Store: store, Namespace: "payments"})
	must(t, err)
	w, err := paymentworker.New(paymentworker.Config{Registry: reg, Provider: client, Queue: paymentworkertest.NewRecordingQueue()})
	must(t, err)
	for round := 1; round <= 2; round++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := w.Handle(ctx, ev)
		cancel()
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("round %d: failures %v, err %v", round, resp.BatchItemFailures, err)
		}
		for _, id := range []string{"evt_fixture_1", "evt_fixture_2"} {
			if n := sim.Charges.SucceededCount(id); n != 1 {
				t.Fatalf("round %d: %s charged %d times", round, id, n)
			}
		}
	}
}
