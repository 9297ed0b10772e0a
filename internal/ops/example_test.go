package ops_test

import (
	"context"
	"fmt"
	"log"

	"github.com/hookline/hookline/internal/awsconf"
	"github.com/hookline/hookline/internal/ops"
	"github.com/hookline/hookline/internal/stack"
)

// Redrive a dead-letter queue, deleting without resending the messages whose
// effect is already recorded.
func ExampleOps_Redrive() {
	ctx := context.Background()
	cfg, err := awsconf.Load(ctx)
	if err != nil {
		log.Fatal(err)
	}
	db, sqsClient := awsconf.DynamoDB(cfg, ""), awsconf.SQS(cfg, "")
	tmpl, err := stack.Embedded()
	if err != nil {
		log.Fatal(err)
	}
	r, err := ops.NewResolver(ops.ResolverConfig{Template: tmpl, SQS: sqsClient})
	if err != nil {
		log.Fatal(err)
	}
	// Without a ledger, usage queues report "n/a" and are resent.
	checkers, err := ops.NewCheckers(r, ops.CheckerDeps{DynamoDB: db})
	if err != nil {
		log.Fatal(err)
	}
	o, err := ops.New(ops.Config{SQS: sqsClient, Resolver: r, Checkers: checkers})
	if err != nil {
		log.Fatal(err)
	}

	rep, err := o.Redrive(ctx, ops.RedriveOptions{Queue: "payments-dlq", SkipCompleted: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("moved %d, skipped %d, failed %d\n", rep.Moved, rep.Skipped, rep.Failed)
}
