package localaws_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/hookline/hookline/internal/awsconf"
	"github.com/hookline/hookline/internal/dev/localaws"
	"github.com/hookline/hookline/internal/stack"
)

// probe is a function added to the repository's template for these
// tests, with statements as the template parser gives them: !GetAtt X.Arn
// as "getatt:X.Arn", !Sub "${X.Arn}/index/name" as "X/index/name".
var probe = stack.Function{LogicalID: "ProbeFunction", Name: "probe", Statements: []stack.Statement{
	{Effect: "Allow", Action: []string{"dynamodb:GetItem", "dynamodb:PutItem"}, Resource: []string{"getatt:IdempotencyTable.Arn"}},
	{Effect: "Allow", Action: []string{"dynamodb:Query"}, Resource: []string{"getatt:IntakeTable.Arn", "IntakeTable/index/by_source_received"}},
	{Effect: "Allow", Action: []string{"dynamodb:Query"}, Resource: []string{"LedgerTable/index/*"}},
	{Effect: "Allow", Action: []string{"dynamodb:Get*"}, Resource: []string{"arn:aws:dynamodb:*:000000000000:table/hookline-work*"}},
	{Effect: "Allow", Action: []string{"sqs:SendMessage"}, Resource: []string{"getatt:PaymentsQueue.Arn"}},
}}

// TestTemplateGrants runs each case on one local AWS whose template has
// probe in it. Grants are not checked against an external endpoint.
func TestTemplateGrants(t *testing.T) {
	if localaws.External() {
		t.Skip("grants are checked by the embedded local AWS only")
	}
	tpl, err := stack.LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	tpl.Functions = append(tpl.Functions, probe)
	env, err := localaws.Start(context.Background(), localaws.Options{Template: tpl})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close() })
	ddb, q := env.FunctionClients(probe.LogicalID)
	for _, c := range []struct {
		name string
		run  func(*testing.T, *localaws.Env, *dynamodb.Client, *sqs.Client)
	}{
		{"granted calls are allowed", grantedCallsAreAllowed},
		{"an action not granted is denied", anActionNotGrantedIsDenied},
		{"a table not granted is denied", aTableNotGrantedIsDenied},
		{"an index is granted apart from its table", anIndexIsGrantedApartFromItsTable},
		{"wildcards match inside a resource", wildcardsMatchInsideAResource},
		{"a transaction with an item not granted writes nothing", aTransactionWithAnItemNotGrantedWritesNothing},
		{"SQS calls are checked per queue and action", sqsCallsAreCheckedPerQueueAndAction},
		{"other credentials are not checked", otherCredentialsAreNotChecked},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, env, ddb, q) })
	}
}

// wantDenied fails unless err is AWS's refusal, with code, of action on
// a resource whose ARN ends in resource.
func wantDenied(t *testing.T, err error, code, action, resource string) {
	t.Helper()
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != code {
		t.Fatalf("err = %v, want %s", err, code)
	}
	msg := ae.ErrorMessage()
	want := "assumed-role/ProbeFunctionRole/ProbeFunction is not authorized to perform: " + action + " on resource: "
	if !strings.Contains(msg, want) || !strings.Contains(msg, resource+" because no identity-based policy allows") {
		t.Fatalf("message %q, want it to name %s on ...%s", msg, action, resource)
	}
}

func idemItem(pk string) map[string]ddbtypes.AttributeValue {
	return map[string]ddbtypes.AttributeValue{"pk": str(pk)}
}

func grantedCallsAreAllowed(t *testing.T, env *localaws.Env, ddb *dynamodb.Client, _ *sqs.Client) {
	ctx := context.Background()
	table := aws.String(env.TableName("IdempotencyTable"))
	if _, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: table, Item: idemItem("granted")}); err != nil {
		t.Fatal(err)
	}
	out, err := ddb.GetItem(ctx, &dynamodb.GetItemInput{TableName: table, Key: idemItem("granted")})
	if err != nil || out.Item == nil {
		t.Fatalf("get = %v, %v", out, err)
	}
}

func anActionNotGrantedIsDenied(t *testing.T, env *localaws.Env, ddb *dynamodb.Client, _ *sqs.Client) {
	_, err := ddb.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{
		TableName: aws.String(env.TableName("IdempotencyTable")), Key: idemItem("x")})
	wantDenied(t, err, "AccessDeniedException", "dynamodb:DeleteItem", ":table/"+env.TableName("IdempotencyTable"))
}

func aTableNotGrantedIsDenied(t *testing.T, env *localaws.Env, ddb *dynamodb.Client, _ *sqs.Client) {
	ledger := env.TableName("LedgerTable")
	_, err := ddb.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(ledger),
		Item: map[string]ddbtypes.AttributeValue{"pk": str("p"), "sk": str("s")}})
	wantDenied(t, err, "AccessDeniedException", "dynamodb:PutItem", ":table/"+ledger)
	if d := env.Denials(); len(d) == 0 || !strings.Contains(strings.Join(d, "\n"), "dynamodb:PutItem on resource: arn:aws:dynamodb:us-east-1:000000000000:table/"+ledger+" ") {
		t.Fatalf("denials %q do not name the put", d)
	}
}

// sourceQuery queries one of the intake table's keys, on an index or
// (index "") the table.
func sourceQuery(env *localaws.Env, index string) *dynamodb.QueryInput {
	in := &dynamodb.QueryInput{TableName: aws.String(env.TableName("IntakeTable")),
		KeyConditionExpression:    aws.String("pk = :v"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":v": str("x")}}
	switch index {
	case "by_source_received":
		in.KeyConditionExpression = aws.String("#s = :v")
		in.ExpressionAttributeNames = map[string]string{"#s": "source"}
	case "by_shard_received":
		in.KeyConditionExpression = aws.String("source_shard = :v")
	}
	if index != "" {
		in.IndexName = aws.String(index)
	}
	return in
}

func anIndexIsGrantedApartFromItsTable(t *testing.T, env *localaws.Env, ddb *dynamodb.Client, _ *sqs.Client) {
	ctx := context.Background()
	for _, index := range []string{"", "by_source_received"} {
		if _, err := ddb.Query(ctx, sourceQuery(env, index)); err != nil {
			t.Fatalf("query %q: %v", index, err)
		}
	}
	_, err := ddb.Query(ctx, sourceQuery(env, "by_shard_received"))
	wantDenied(t, err, "AccessDeniedException", "dynamodb:Query", ":table/"+env.TableName("IntakeTable")+"/index/by_shard_received")
}

func wildcardsMatchInsideAResource(t *testing.T, env *localaws.Env, ddb *dynamodb.Client, _ *sqs.Client) {
	ctx := context.Background()
	ledger := env.TableName("LedgerTable")
	keyed := func(index string) *dynamodb.QueryInput {
		in := &dynamodb.QueryInput{TableName: aws.String(ledger), KeyConditionExpression: aws.String("pk = :v"),
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":v": str("x")}}
		if index != "" {
			in.IndexName, in.KeyConditionExpression = aws.String(index), aws.String("gsi1pk = :v")
		}
		return in
	}
	// "${LedgerTable.Arn}/index/*" grants the index, not the table;
	if _, err := ddb.Query(ctx, keyed("gsi1")); err != nil {
		t.Fatalf("index query: %v", err)
	}
	_, err := ddb.Query(ctx, keyed(""))
	wantDenied(t, err, "AccessDeniedException", "dynamodb:Query", ":table/"+ledger)
	// "table/hookline-work*" the workloads table, to "dynamodb:Get*" only.
	workloads := env.TableName("WorkloadsTable")
	key := map[string]ddbtypes.AttributeValue{"pk": str("p"), "sk": str("s")}
	if _, err := ddb.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(workloads), Key: key}); err != nil {
		t.Fatalf("get: %v", err)
	}
	_, err = ddb.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]ddbtypes.KeysAndAttributes{
		workloads: {Keys: []map[string]ddbtypes.AttributeValue{key}}}})
	wantDenied(t, err, "AccessDeniedException", "dynamodb:BatchGetItem", ":table/"+workloads)
}

func aTransactionWithAnItemNotGrantedWritesNothing(t *testing.T, env *localaws.Env, ddb *dynamodb.Client, _ *sqs.Client) {
	ctx := context.Background()
	idem, ledger := env.TableName("IdempotencyTable"), env.TableName("LedgerTable")
	_, err := ddb.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
		{Put: &ddbtypes.Put{TableName: aws.String(idem), Item: idemItem("tx-denied")}},
		{ConditionCheck: &ddbtypes.ConditionCheck{TableName: aws.String(ledger),
			Key:                 map[string]ddbtypes.AttributeValue{"pk": str("p"), "sk": str("s")},
			ConditionExpression: aws.String("attribute_not_exists(pk)")}},
	}})
	wantDenied(t, err, "AccessDeniedException", "dynamodb:ConditionCheckItem", ":table/"+ledger)
	out, err := env.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(idem), Key: idemItem("tx-denied"), ConsistentRead: aws.Bool(true)})
	if err != nil || out.Item != nil {
		t.Fatalf("the granted item of a denied transaction: %v, %v; want none", out.Item, err)
	}
	// Its items are granted one by one: two puts on the granted table pass.
	if _, err := ddb.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
		{Put: &ddbtypes.Put{TableName: aws.String(idem), Item: idemItem("tx-1")}},
		{Put: &ddbtypes.Put{TableName: aws.String(idem), Item: idemItem("tx-2")}},
	}}); err != nil {
		t.Fatal(err)
	}
}

func sqsCallsAreCheckedPerQueueAndAction(t *testing.T, env *localaws.Env, _ *dynamodb.Client, q *sqs.Client) {
	ctx := context.Background()
	payments, usage := env.QueueURL("PaymentsQueue"), env.QueueURL("UsageQueue")
	if _, err := q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(payments), MessageBody: aws.String("{}")}); err != nil {
		t.Fatal(err)
	}
	// A batch is authorised as its single form, on its queue;
	_, err := q.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(usage),
		Entries: []sqstypes.SendMessageBatchRequestEntry{{Id: aws.String("1"), MessageBody: aws.String("{}")}}})
	wantDenied(t, err, "AccessDenied", "sqs:SendMessage", env.QueueARN("UsageQueue"))
	// and sending grants no receiving.
	_, err = q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(payments)})
	wantDenied(t, err, "AccessDenied", "sqs:ReceiveMessage", env.QueueARN("PaymentsQueue"))
}

func otherCredentialsAreNotChecked(t *testing.T, env *localaws.Env, _ *dynamodb.Client, _ *sqs.Client) {
	ctx := context.Background()
	cfg := env.Config.Copy()
	cfg.Credentials = credentials.NewStaticCredentialsProvider("operator", "secret", "")
	signed := awsconf.DynamoDB(cfg, env.DynamoEndpoint)
	ledger := aws.String(env.TableName("LedgerTable"))
	key := map[string]ddbtypes.AttributeValue{"pk": str("p"), "sk": str("unchecked")}
	for name, c := range map[string]*dynamodb.Client{"harness": env.DynamoDB, "signed": signed} {
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: ledger, Item: key}); err != nil {
			t.Fatalf("%s put: %v", name, err)
		}
		if _, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: ledger, Key: key}); err != nil {
			t.Fatalf("%s delete: %v", name, err)
		}
	}
	if _, err := env.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(env.QueueURL("UsageQueue"))}); err != nil {
		t.Fatal(err)
	}
}
