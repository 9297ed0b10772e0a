package localaws

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookline/hookline/internal/stack"
)

func (e *Env) createResources(ctx context.Context, prefix string) error {
	e.queueURLs = map[string]string{}
	e.queueARNs = map[string]string{}
	e.tables = map[string]string{}
	// Dead-letter queues first: a redrive policy must name an existing ARN.
	for _, pass := range []bool{false, true} {
		for _, q := range e.Template.Queues {
			if (q.DeadLetterQueue != "") != pass {
				continue
			}
			if err := e.createQueue(ctx, prefix, q); err != nil {
				return err
			}
		}
	}
	for _, t := range e.Template.Tables {
		if err := e.createTable(ctx, prefix, t); err != nil {
			return err
		}
	}
	return nil
}

func (e *Env) createQueue(ctx context.Context, prefix string, q stack.Queue) error {
	attrs := map[string]string{
		string(sqstypes.QueueAttributeNameVisibilityTimeout):      strconv.Itoa(q.VisibilityTimeout),
		string(sqstypes.QueueAttributeNameMessageRetentionPeriod): strconv.Itoa(q.RetentionPeriod),
	}
	if q.DeadLetterQueue != "" {
		policy, err := json.Marshal(map[string]string{
			"deadLetterTargetArn": e.queueARNs[q.DeadLetterQueue],
			"maxReceiveCount":     strconv.Itoa(q.MaxReceiveCount),
		})
		if err != nil {
			return err
		}
		attrs[string(sqstypes.QueueAttributeNameRedrivePolicy)] = string(policy)
	}
	out, err := e.SQS.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(prefix + q.Name), Attributes: attrs})
	if err != nil {
		return fmt.Errorf("localaws: create queue %s: %w", q.Name, err)
	}
	url := aws.ToString(out.QueueUrl)
	got, err := e.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       out.QueueUrl,
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return fmt.Errorf("localaws: queue %s arn: %w", q.Name, err)
	}
	arn := got.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
	for _, k := range []string{q.LogicalID, q.Name} {
		e.queueURLs[k] = url
		e.queueARNs[k] = arn
	}
	return nil
}

func (e *Env) createTable(ctx context.Context, prefix string, t stack.Table) error {
	name := prefix + t.Name
	in := createTableInput(name, t)
	_, err := e.DynamoDB.CreateTable(ctx, in)
	var inUse *ddbtypes.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("localaws: create table %s: %w", name, err)
	}
	if err := e.waitActive(ctx, name); err != nil {
		return err
	}
	if t.TTLAttribute != "" {
		// The embedded front records the setting (DescribeTimeToLive shows
		// it) but nothing expires items locally. Nothing in hookline relies
		// on TTL deletion for correctness (expiry is always checked
		// explicitly), so a refusal by another endpoint is not fatal.
		_, _ = e.DynamoDB.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
			TableName: aws.String(name),
			TimeToLiveSpecification: &ddbtypes.TimeToLiveSpecification{
				AttributeName: aws.String(t.TTLAttribute), Enabled: aws.Bool(true),
			},
		})
	}
	e.tables[t.LogicalID] = name
	e.tables[t.Name] = name
	return nil
}

// waitActive polls DescribeTable until the table is ACTIVE. An empty
// status from a table that does describe is taken as ready (bare minidyn
// reports one; the embedded front answers ACTIVE).
func (e *Env) waitActive(ctx context.Context, name string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := e.DynamoDB.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		if err == nil {
			s := out.Table.TableStatus
			if s == "" || s == ddbtypes.TableStatusActive {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("localaws: table %s not active after 30s: %v", name, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func createTableInput(name string, t stack.Table) *dynamodb.CreateTableInput {
	attrs := map[string]ddbtypes.ScalarAttributeType{}
	in := &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: ddbtypes.BillingModePayPerRequest,
		KeySchema:   keySchema(t.Hash, t.Range, attrs),
	}
	for _, idx := range t.Indexes {
		in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, ddbtypes.GlobalSecondaryIndex{
			IndexName:  aws.String(idx.Name),
			KeySchema:  keySchema(idx.Hash, idx.Range, attrs),
			Projection: &ddbtypes.Projection{ProjectionType: ddbtypes.ProjectionType(idx.Projection)},
		})
	}
	for n, typ := range attrs {
		in.AttributeDefinitions = append(in.AttributeDefinitions, ddbtypes.AttributeDefinition{
			AttributeName: aws.String(n), AttributeType: typ,
		})
	}
	return in
}

func keySchema(hash stack.KeyAttr, rng *stack.KeyAttr, attrs map[string]ddbtypes.ScalarAttributeType) []ddbtypes.KeySchemaElement {
	attrs[hash.Name] = ddbtypes.ScalarAttributeType(hash.Type)
	ks := []ddbtypes.KeySchemaElement{{AttributeName: aws.String(hash.Name), KeyType: ddbtypes.KeyTypeHash}}
	if rng != nil {
		attrs[rng.Name] = ddbtypes.ScalarAttributeType(rng.Type)
		ks = append(ks, ddbtypes.KeySchemaElement{AttributeName: aws.String(rng.Name), KeyType: ddbtypes.KeyTypeRange})
	}
	return ks
}
