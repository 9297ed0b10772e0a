package stack_test

import (
	"fmt"
	"log"

	"github.com/hookline/hookline/internal/stack"
)

func Example() {
	t, err := stack.Load("infra/template.yaml")
	if err != nil {
		log.Fatal(err)
	}
	for _, q := range t.Queues {
		fmt.Println(q.Name, q.DeadLetterQueue)
	}
}

// Intrinsic functions become references: the redrive policy's !GetAtt
// names the dead-letter queue by its logical ID.
func ExampleParse() {
	const yaml = `
Resources:
  PaymentsQueue:
    Type: AWS::SQS::Queue
    Properties:
      QueueName: payments
      RedrivePolicy:
        deadLetterTargetArn: !GetAtt PaymentsDLQ.Arn
        maxReceiveCount: 5
  PaymentsDLQ:
    Type: AWS::SQS::Queue
    Properties:
      QueueName: payments-dlq
`
	t, err := stack.Parse("example.yaml", []byte(yaml))
	if err != nil {
		log.Fatal(err)
	}
	for _, q := range t.Queues {
		fmt.Printf("%s: %s dead-letter=%q max-receives=%d\n", q.LogicalID, q.Name, q.DeadLetterQueue, q.MaxReceiveCount)
	}
	fmt.Println(stack.LogicalID("getatt:PaymentsDLQ.Arn"))
	// Output:
	// PaymentsDLQ: payments-dlq dead-letter="" max-receives=0
	// PaymentsQueue: payments dead-letter="PaymentsDLQ" max-receives=5
	// PaymentsDLQ
}
