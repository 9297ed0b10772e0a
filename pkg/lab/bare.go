package lab

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookline/hookline/pkg/local/localaws"
)

// BareCeiling is the bare pipeline's saturated rate on env: the DynamoDB
// and SQS calls of the full path and nothing else. Intake is 32
// goroutines doing a conditional put, a send and a status update; four
// pollers receive batches of 10, make a conditional claim and a
// conditioned complete per message, and delete in batches. It is timed
// from the first intake to the last delete of n events.
func BareCeiling(ctx context.Context, env *localaws.Env, n int) (float64, error) {
	q, err := env.SQS.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(fmt.Sprintf("lab-bare-%08x", rand.Uint32()))})
	if err != nil {
		return 0, fmt.Errorf("lab: bare queue: %w", err)
	}
	b := bare{env: env, url: aws.ToString(q.QueueUrl), intake: env.TableName("IntakeTable"), claims: env.TableName("IdempotencyTable"),
		run: strconv.FormatUint(rand.Uint64(), 36)}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { b.consume(ctx, n) })
	}
	b.produce(ctx, n)
	wg.Wait()
	if int(b.done.Load()) < n {
		return 0, errors.New("lab: the bare pipeline did not finish within 5 minutes")
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

type bare struct {
	env                 *localaws.Env
	url, intake, claims string
	run                 string
	done                atomic.Int64
}

func (b *bare) key(i int) map[string]ddbtypes.AttributeValue {
	return map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "bare#" + b.run + "#" + strconv.Itoa(i)}}
}

// produce is the intake: record, send, mark.
func (b *bare) produce(ctx context.Context, n int) {
	ids := make(chan int)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for i := range ids {
				b.intakeOne(ctx, i)
			}
		})
	}
	for i := range n {
		ids <- i
	}
	close(ids)
	wg.Wait()
}

func (b *bare) intakeOne(ctx context.Context, i int) {
	item := b.key(i)
	item["status"] = &ddbtypes.AttributeValueMemberS{Value: "received"}
	_, _ = b.env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(b.intake), Item: item,
		ConditionExpression: aws.String("attribute_not_exists(pk)")})
	_, _ = b.env.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(b.url), MessageBody: aws.String(strconv.Itoa(i))})
	_, _ = b.env.DynamoDB.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(b.intake), Key: b.key(i),
		UpdateExpression: aws.String("SET #s = :e"), ExpressionAttributeNames: map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":e": &ddbtypes.AttributeValueMemberS{Value: "enqueued"}}})
}

// consume is the worker: claim, complete, delete. It short-polls and
// pauses 5 ms when the queue is empty, as the local event source does:
// local-aws-sqs answers a long poll only when its wait ends, so a long
// poll would charge the bare pipeline a wait the full path never has.
func (b *bare) consume(ctx context.Context, n int) {
	for int(b.done.Load()) < n && ctx.Err() == nil {
		out, err := b.env.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(b.url), MaxNumberOfMessages: 10})
		if err != nil || len(out.Messages) == 0 {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		var del []sqstypes.DeleteMessageBatchRequestEntry
		for j, m := range out.Messages {
			i, _ := strconv.Atoi(aws.ToString(m.Body))
			b.claimOne(ctx, i)
			del = append(del, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(j)), ReceiptHandle: m.ReceiptHandle})
		}
		if _, err := b.env.SQS.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(b.url), Entries: del}); err == nil {
			b.done.Add(int64(len(del)))
		}
	}
}

func (b *bare) claimOne(ctx context.Context, i int) {
	item := b.key(i)
	item["status"] = &ddbtypes.AttributeValueMemberS{Value: "IN_PROGRESS"}
	_, _ = b.env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(b.claims), Item: item,
		ConditionExpression: aws.String("attribute_not_exists(pk)")})
	_, _ = b.env.DynamoDB.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(b.claims), Key: b.key(i),
		UpdateExpression: aws.String("SET #s = :c"), ConditionExpression: aws.String("#s = :p"),
		ExpressionAttributeNames: map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{
			":c": &ddbtypes.AttributeValueMemberS{Value: "COMPLETED"}, ":p": &ddbtypes.AttributeValueMemberS{Value: "IN_PROGRESS"},
		}})
}
