package localaws_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookline/hookline/internal/dev/localaws"
)

func str(s string) *ddbtypes.AttributeValueMemberS { return &ddbtypes.AttributeValueMemberS{Value: s} }

func TestEveryTemplateResourceExists(t *testing.T) {
	env := localaws.StartForTest(t)
	ctx := context.Background()
	for _, q := range env.Template.Queues {
		url := env.QueueURL(q.Name)
		if url == "" {
			t.Fatalf("queue %s has no URL", q.Name)
		}
		got, err := env.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
			QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll},
		})
		if err != nil {
			t.Fatalf("queue %s: %v", q.Name, err)
		}
		if v := got.Attributes["VisibilityTimeout"]; v != strconv.Itoa(q.VisibilityTimeout) {
			t.Errorf("queue %s VisibilityTimeout = %s, template says %d", q.Name, v, q.VisibilityTimeout)
		}
		if q.DeadLetterQueue != "" && got.Attributes["RedrivePolicy"] == "" {
			t.Errorf("queue %s has no redrive policy", q.Name)
		}
	}
	for _, tb := range env.Template.Tables {
		if _, err := env.DynamoDB.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(env.TableName(tb.LogicalID))}); err != nil {
			t.Errorf("table %s: %v", tb.LogicalID, err)
		}
	}
}

func TestConcurrentConditionalPutsExactlyOneWins(t *testing.T) {
	env := localaws.StartForTest(t)
	table := env.TableName("IdempotencyTable")
	for round := range 5 {
		var wins, conflicts atomic.Int32
		var wg sync.WaitGroup
		for i := range 32 {
			wg.Go(func() {
				_, err := env.DynamoDB.PutItem(context.Background(), &dynamodb.PutItemInput{
					TableName:           aws.String(table),
					Item:                map[string]ddbtypes.AttributeValue{"pk": str(fmt.Sprintf("round-%d", round)), "who": str(strconv.Itoa(i))},
					ConditionExpression: aws.String("attribute_not_exists(pk)"),
				})
				var ccf *ddbtypes.ConditionalCheckFailedException
				switch {
				case err == nil:
					wins.Add(1)
				case errors.As(err, &ccf):
					conflicts.Add(1)
				default:
					t.Errorf("put: %v", err)
				}
			})
		}
		wg.Wait()
		if wins.Load() != 1 || conflicts.Load() != 31 {
			t.Fatalf("round %d: %d wins, %d conflicts; want 1 and 31", round, wins.Load(), conflicts.Load())
		}
	}
}

func TestTransactWriteIsAllOrNothing(t *testing.T) {
	env := localaws.StartForTest(t)
	ctx := context.Background()
	table := env.TableName("LedgerTable")
	key := func(pk string) map[string]ddbtypes.AttributeValue {
		return map[string]ddbtypes.AttributeValue{"pk": str(pk), "sk": str("x")}
	}
	if _, err := env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: key("exists")}); err != nil {
		t.Fatal(err)
	}
	// Given one put that would succeed and a condition that fails,
	// when both run in one transaction,
	_, err := env.DynamoDB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
		{Put: &ddbtypes.Put{TableName: aws.String(table), Item: key("new"), ConditionExpression: aws.String("attribute_not_exists(pk)")}},
		{ConditionCheck: &ddbtypes.ConditionCheck{TableName: aws.String(table), Key: key("exists"), ConditionExpression: aws.String("attribute_not_exists(pk)")}},
	}})
	// then the whole transaction is cancelled with a reason per item
	var tce *ddbtypes.TransactionCanceledException
	if !errors.As(err, &tce) {
		t.Fatalf("err = %v, want TransactionCanceledException", err)
	}
	if len(tce.CancellationReasons) != 2 || aws.ToString(tce.CancellationReasons[1].Code) != "ConditionalCheckFailed" {
		t.Fatalf("reasons = %+v", tce.CancellationReasons)
	}
	// and the put did not happen.
	got, err := env.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key("new"), ConsistentRead: aws.Bool(true)})
	if err != nil || got.Item != nil {
		t.Fatalf("new item = %v, %v; want absent", got.Item, err)
	}
}

func receiveOne(t *testing.T, env *localaws.Env, url string, visibility, wait int32) *sqstypes.Message {
	t.Helper()
	out, err := env.SQS.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(url), MaxNumberOfMessages: 1, WaitTimeSeconds: wait, VisibilityTimeout: visibility,
		//lint:ignore SA1019 local-aws-sqs ignores MessageSystemAttributeNames; AWS accepts both.
		AttributeNames:              []sqstypes.QueueAttributeName{"ApproximateReceiveCount"},
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameApproximateReceiveCount},
	})
	if err != nil {
		t.Fatalf("receive: %v", err)
	}
	if len(out.Messages) == 0 {
		return nil
	}
	return &out.Messages[0]
}

func TestUnackedMessageReturnsAfterVisibilityTimeout(t *testing.T) {
	t.Parallel() // waits out SQS timeouts on its own local AWS
	env := localaws.StartForTest(t)
	url := env.QueueURL("payments")
	if _, err := env.SQS.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("m")}); err != nil {
		t.Fatal(err)
	}
	first := receiveOne(t, env, url, 2, 1)
	if first == nil || first.Attributes["ApproximateReceiveCount"] != "1" {
		t.Fatalf("first receive = %+v", first)
	}
	if m := receiveOne(t, env, url, 2, 0); m != nil {
		t.Fatalf("message visible during its visibility timeout")
	}
	time.Sleep(2100 * time.Millisecond)
	second := receiveOne(t, env, url, 2, 1)
	if second == nil || second.Attributes["ApproximateReceiveCount"] != "2" {
		t.Fatalf("second receive = %+v; want receive count 2", second)
	}
}

func TestMessageMovesToDLQAfterMaxReceiveCount(t *testing.T) {
	t.Parallel() // waits out SQS timeouts on its own local AWS
	env := localaws.StartForTest(t)
	ctx := context.Background()
	q, _ := env.Template.Queue("payments")
	url := env.QueueURL("payments")
	if _, err := env.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("poison")}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= q.MaxReceiveCount; i++ {
		// Each receive is left unacknowledged until its visibility lapses,
		// as a handler error would leave it. (ChangeMessageVisibility is not
		// used here: local-aws-sqs counts it as a receive; see docs.)
		m := receiveOne(t, env, url, 1, 2)
		if m == nil {
			t.Fatalf("receive %d: nothing", i)
		}
		if got := m.Attributes["ApproximateReceiveCount"]; got != strconv.Itoa(i) {
			t.Fatalf("receive %d: ApproximateReceiveCount = %s", i, got)
		}
	}
	if m := receiveOne(t, env, url, 30, 2); m != nil {
		t.Fatalf("message received a %dth time; want it dead-lettered", q.MaxReceiveCount+1)
	}
	dlq := receiveOne(t, env, env.QueueURL(q.DeadLetterQueue), 30, 1)
	if dlq == nil || aws.ToString(dlq.Body) != "poison" {
		t.Fatalf("dlq message = %+v", dlq)
	}
}

func TestPutItemReturnsReplacedItem(t *testing.T) {
	env := localaws.StartForTest(t)
	ctx := context.Background()
	table := env.TableName("IdempotencyTable")
	put := func(v string) map[string]ddbtypes.AttributeValue {
		out, err := env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String(table), ReturnValues: ddbtypes.ReturnValueAllOld,
			Item: map[string]ddbtypes.AttributeValue{"pk": str("k"), "v": str(v)},
		})
		if err != nil {
			t.Fatal(err)
		}
		return out.Attributes
	}
	// A new key replaces nothing, as on DynamoDB,
	if old := put("first"); len(old) != 0 {
		t.Fatalf("new key returned %v, want no attributes", old)
	}
	// and an overwrite returns the item it replaced.
	old := put("second")
	if v, ok := old["v"].(*ddbtypes.AttributeValueMemberS); !ok || v.Value != "first" {
		t.Fatalf("overwrite returned %v, want the first item", old)
	}
}
