package stack

import (
	"fmt"
	"path"
	"strings"

	"github.com/awslabs/goformation/v7/cloudformation"
	"github.com/awslabs/goformation/v7/cloudformation/apigatewayv2"
	"github.com/awslabs/goformation/v7/cloudformation/cloudwatch"
	"github.com/awslabs/goformation/v7/cloudformation/dynamodb"
	"github.com/awslabs/goformation/v7/cloudformation/lambda"
	"github.com/awslabs/goformation/v7/cloudformation/scheduler"
	"github.com/awslabs/goformation/v7/cloudformation/serverless"
	"github.com/awslabs/goformation/v7/cloudformation/sqs"
)

// Queue is an AWS::SQS::Queue.
type Queue struct {
	LogicalID         string
	Name              string
	VisibilityTimeout int // seconds; 30 when unset, as on AWS
	RetentionPeriod   int // seconds; 345600 when unset, as on AWS
	SSE               bool
	FIFO              bool
	// DeadLetterQueue is the logical ID of the redrive target, or "".
	DeadLetterQueue string
	MaxReceiveCount int
	// SourceQueue is set on queues returned by DeadLetterQueues.
	SourceQueue string
}

// KeyAttr is one key attribute of a table or index.
type KeyAttr struct {
	Name string
	Type string // S, N or B
}

// Index is a global secondary index.
type Index struct {
	Name       string
	Hash       KeyAttr
	Range      *KeyAttr
	Projection string
}

// Table is an AWS::DynamoDB::Table.
type Table struct {
	LogicalID    string
	Name         string
	Hash         KeyAttr
	Range        *KeyAttr
	Indexes      []Index
	BillingMode  string
	PITR         bool
	TTLAttribute string
}

// Alarm is an AWS::CloudWatch::Alarm: on one metric (an SQS metric,
// or one of ours), or on a Metrics Insights query.
type Alarm struct {
	LogicalID  string
	MetricName string
	Namespace  string
	// Queue is the logical ID named by the QueueName dimension, or "".
	Queue string
	// Dimensions are the metric's dimensions, by name.
	Dimensions map[string]string
	// Queries are the expressions of the alarm's Metrics, such as a
	// Metrics Insights SELECT.
	Queries []string
}

// Function is an AWS::Serverless::Function.
type Function struct {
	LogicalID string
	// Name is the directory under functions/ and dist/ (from CodeUri).
	Name        string
	Timeout     int // seconds; 3 when unset, as on AWS
	MemorySize  int
	Environment map[string]string
	// Statements are the inline IAM policy statements the function is granted.
	Statements []Statement
}

// Statement is one IAM policy statement, with Action and Resource always
// lists.
type Statement struct {
	Effect   string
	Action   []string
	Resource []string
}

// EventSource is an AWS::Lambda::EventSourceMapping from a queue.
type EventSource struct {
	LogicalID             string
	Function              string // logical ID
	Queue                 string // logical ID
	BatchSize             int
	MaxConcurrency        int
	BatchingWindowSeconds int
	FunctionResponseTypes []string
}

// Schedule is an AWS::Scheduler::Schedule that invokes a function.
type Schedule struct {
	LogicalID  string
	Expression string
	Function   string // logical ID
	Input      string
}

// Route is an AWS::ApiGatewayV2::Route integrated with a function.
type Route struct {
	LogicalID string
	Method    string
	Path      string
	Function  string // logical ID
	// Authorization is the route's AuthorizationType: NONE (the default),
	// AWS_IAM, JWT or CUSTOM.
	Authorization string
}

func (t *Template) add(id string, r cloudformation.Resource) error {
	switch v := r.(type) {
	case *sqs.Queue:
		t.Queues = append(t.Queues, queueOf(id, v))
	case *dynamodb.Table:
		t.Tables = append(t.Tables, tableOf(id, v))
	case *cloudwatch.Alarm:
		t.Alarms = append(t.Alarms, alarmOf(id, v))
	case *serverless.Function:
		f, err := functionOf(id, v)
		if err != nil {
			return err
		}
		t.Functions = append(t.Functions, f)
	case *lambda.EventSourceMapping:
		t.EventSources = append(t.EventSources, eventSourceOf(id, v))
	case *scheduler.Schedule:
		t.Schedules = append(t.Schedules, scheduleOf(id, v))
	case *apigatewayv2.Route:
		route, err := t.routeOf(id, v)
		if err != nil {
			return err
		}
		t.Routes = append(t.Routes, route)
	}
	return nil
}

func queueOf(id string, q *sqs.Queue) Queue {
	out := Queue{
		LogicalID:         id,
		Name:              deref(q.QueueName, id),
		VisibilityTimeout: derefInt(q.VisibilityTimeout, 30),
		RetentionPeriod:   derefInt(q.MessageRetentionPeriod, 345600),
		SSE:               derefBool(q.SqsManagedSseEnabled) || q.KmsMasterKeyId != nil,
		FIFO:              derefBool(q.FifoQueue),
	}
	if rp, ok := q.RedrivePolicy.(map[string]interface{}); ok {
		if arn, ok := rp["deadLetterTargetArn"].(string); ok {
			out.DeadLetterQueue = LogicalID(arn)
		}
		out.MaxReceiveCount = toInt(rp["maxReceiveCount"])
	}
	return out
}

func tableOf(id string, tb *dynamodb.Table) Table {
	types := map[string]string{}
	for _, a := range tb.AttributeDefinitions {
		types[a.AttributeName] = a.AttributeType
	}
	out := Table{
		LogicalID:   id,
		Name:        deref(tb.TableName, id),
		BillingMode: deref(tb.BillingMode, "PROVISIONED"),
	}
	out.Hash, out.Range = keysOf(tb.KeySchema, types)
	for _, g := range tb.GlobalSecondaryIndexes {
		idx := Index{Name: g.IndexName, Projection: deref(g.Projection.ProjectionType, "ALL")}
		idx.Hash, idx.Range = keysOf(g.KeySchema, types)
		out.Indexes = append(out.Indexes, idx)
	}
	if p := tb.PointInTimeRecoverySpecification; p != nil {
		out.PITR = derefBool(p.PointInTimeRecoveryEnabled)
	}
	if ttl := tb.TimeToLiveSpecification; ttl != nil && ttl.Enabled {
		out.TTLAttribute = deref(ttl.AttributeName, "")
	}
	return out
}

func keysOf(ks interface{}, types map[string]string) (KeyAttr, *KeyAttr) {
	var hash KeyAttr
	var rng *KeyAttr
	elems, _ := ks.([]dynamodb.Table_KeySchema)
	for _, k := range elems {
		attr := KeyAttr{Name: k.AttributeName, Type: types[k.AttributeName]}
		if k.KeyType == "HASH" {
			hash = attr
		} else {
			rng = &attr
		}
	}
	return hash, rng
}

func alarmOf(id string, a *cloudwatch.Alarm) Alarm {
	out := Alarm{LogicalID: id, MetricName: deref(a.MetricName, ""), Namespace: deref(a.Namespace, ""), Dimensions: map[string]string{}}
	for _, d := range a.Dimensions {
		out.Dimensions[d.Name] = d.Value
		if d.Name == "QueueName" {
			out.Queue = LogicalID(d.Value)
		}
	}
	for _, m := range a.Metrics {
		if q := deref(m.Expression, ""); q != "" {
			out.Queries = append(out.Queries, q)
		}
	}
	return out
}

func functionOf(id string, f *serverless.Function) (Function, error) {
	out := Function{
		LogicalID:  id,
		Timeout:    derefInt(f.Timeout, 3),
		MemorySize: derefInt(f.MemorySize, 128),
	}
	if f.CodeUri == nil || f.CodeUri.String == nil {
		return out, fmt.Errorf("function has no CodeUri string")
	}
	out.Name = path.Base(strings.TrimSuffix(*f.CodeUri.String, "/"))
	if f.Environment != nil {
		out.Environment = presentVariables(f.Environment.Variables)
	}
	out.Statements = statementsOf(f.Policies)
	return out, nil
}

func eventSourceOf(id string, m *lambda.EventSourceMapping) EventSource {
	out := EventSource{
		LogicalID:             id,
		Function:              LogicalID(m.FunctionName),
		BatchSize:             derefInt(m.BatchSize, 10),
		BatchingWindowSeconds: derefInt(m.MaximumBatchingWindowInSeconds, 0),
		FunctionResponseTypes: m.FunctionResponseTypes,
	}
	if m.EventSourceArn != nil {
		out.Queue = LogicalID(*m.EventSourceArn)
	}
	if m.ScalingConfig != nil {
		out.MaxConcurrency = derefInt(m.ScalingConfig.MaximumConcurrency, 0)
	}
	return out
}

func scheduleOf(id string, s *scheduler.Schedule) Schedule {
	out := Schedule{LogicalID: id, Expression: s.ScheduleExpression}
	if s.Target != nil {
		out.Function = LogicalID(s.Target.Arn)
		out.Input = deref(s.Target.Input, "")
	}
	return out
}

func (t *Template) routeOf(id string, r *apigatewayv2.Route) (Route, error) {
	method, p, ok := strings.Cut(r.RouteKey, " ")
	if !ok {
		return Route{}, fmt.Errorf("route key %q is not \"METHOD /path\"", r.RouteKey)
	}
	out := Route{LogicalID: id, Method: method, Path: p, Authorization: deref(r.AuthorizationType, "NONE")}
	target := deref(r.Target, "")
	integID, ok := strings.CutPrefix(target, "integrations/")
	if !ok {
		return out, fmt.Errorf("route target %q is not integrations/<id>", target)
	}
	integ, err := t.raw.GetApiGatewayV2IntegrationWithName(integID)
	if err != nil {
		return out, fmt.Errorf("route integration: %w", err)
	}
	out.Function = LogicalID(deref(integ.IntegrationUri, ""))
	return out, nil
}

func deref(p *string, def string) string {
	if p == nil {
		return def
	}
	return *p
}

func derefInt(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}

func derefBool(p *bool) bool { return p != nil && *p }

func toInt(v interface{}) int {
	switch n := v.(type) {
	case int:
		return n
	case float64:
		return int(n)
	case string:
		var i int
		fmt.Sscan(n, &i)
		return i
	}
	return 0
}

func statementsOf(p *serverless.Function_Policies) []Statement {
	if p == nil {
		return nil
	}
	var docs []serverless.Function_IAMPolicyDocument
	if p.IAMPolicyDocument != nil {
		docs = append(docs, *p.IAMPolicyDocument)
	}
	if p.IAMPolicyDocumentArray != nil {
		docs = append(docs, *p.IAMPolicyDocumentArray...)
	}
	var out []Statement
	for _, d := range docs {
		for _, raw := range d.Statement {
			m, ok := raw.(map[string]interface{})
			if !ok {
				continue
			}
			out = append(out, Statement{
				Effect:   fmt.Sprint(m["Effect"]),
				Action:   stringsOf(m["Action"]),
				Resource: stringsOf(m["Resource"]),
			})
		}
	}
	return out
}

func stringsOf(v interface{}) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []interface{}:
		out := make([]string, 0, len(x))
		for _, e := range x {
			out = append(out, fmt.Sprint(e))
		}
		return out
	}
	return nil
}

// presentVariables drops the variables a deployment leaves unset: one
// whose value is !Ref AWS::NoValue, or an !If whose branch taken is,
// resolves to nothing, which the parser gives as "".
func presentVariables(vars map[string]string) map[string]string {
	out := make(map[string]string, len(vars))
	for k, v := range vars {
		if v != "" {
			out[k] = v
		}
	}
	return out
}
