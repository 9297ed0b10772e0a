package pager_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/hookline/hookline/internal/awsconf"
	"github.com/hookline/hookline/internal/pager"
)

// A page commits together with the decision that caused it, in the caller's
// own transaction, and is sent later by Flush.
func ExampleOutbox_EnqueueItem() {
	ctx := context.Background()
	cfg, err := awsconf.Load(ctx)
	if err != nil {
		log.Fatal(err)
	}
	db := awsconf.DynamoDB(cfg, "")
	sender, err := pager.NewHTTPSender(pager.HTTPSenderConfig{URL: pager.DefaultURL})
	if err != nil {
		log.Fatal(err)
	}
	outbox, err := pager.NewOutbox(pager.OutboxConfig{DB: db, Table: "hookline-ledger", Sender: sender})
	if err != nil {
		log.Fatal(err)
	}

	ev := pager.Event{
		RoutingKey:  "R0UT1NGKEY",
		EventAction: "trigger",
		DedupKey:    "spend-cap/wl_1",
		Payload:     &pager.Payload{Summary: "workload wl_1 paused at its spend cap", Source: "hookline", Severity: "warning"},
	}
	item, err := outbox.EnqueueItem(ev, time.Now()) // a conditional Put
	if err != nil {
		log.Fatal(err)
	}
	var items []types.TransactWriteItem // the caller's own writes
	items = append(items, item)
	_, err = db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	if err != nil {
		log.Fatal(err)
	}

	res, err := outbox.Flush(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("sent %d, retried %d, failed %d\n", res.Sent, res.Retried, res.Failed)
}
