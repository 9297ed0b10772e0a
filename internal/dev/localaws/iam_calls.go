package localaws

import (
	"cmp"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/hookline/hookline/internal/awsconf"
)

// FunctionClients returns DynamoDB and SQS clients that call as a
// template function (by logical ID), with credentials whose access key ID
// names it ([AccessKeyID]): the embedded DynamoDB and SQS allow their
// calls only as far as the function's template statements grant them
// (iam.go). Against an external endpoint, which checks nothing here, they
// are [Env.DynamoDB] and [Env.SQS].
func (e *Env) FunctionClients(function string) (*dynamodb.Client, *sqs.Client) {
	if External() {
		return e.DynamoDB, e.SQS
	}
	cfg := e.Config.Copy()
	cfg.Credentials = credentials.NewStaticCredentialsProvider(AccessKeyID(function), "local", "")
	dynamoCfg := cfg.Copy()
	dynamoCfg.HTTPClient = &http.Client{Transport: inProcess{e.dynamoHandler}}
	return awsconf.DynamoDB(dynamoCfg, e.DynamoEndpoint), awsconf.SQS(cfg, e.SQSEndpoint)
}

// dynamoDenial answers a DynamoDB call that the template function who
// signed r may not make, with AccessDeniedException naming the first
// action and resource refused; it answers status 0 for a call it allows
// or does not check.
func (g *grants) dynamoDenial(r *http.Request, op string, body []byte) (int, []byte) {
	_, p := g.caller(r)
	if p == nil {
		return 0, nil
	}
	if req, denied := p.denied(dynamoRequests(op, body)); denied {
		return apiError(http.StatusBadRequest, "AccessDeniedException", g.deny(p, req))
	}
	return 0, nil
}

// dynamoCall is what authorising a DynamoDB call reads of its request.
type dynamoCall struct {
	TableName     string
	IndexName     string
	RequestItems  map[string]json.RawMessage
	TransactItems []map[string]struct{ TableName string }
}

// transactActions are the actions a transaction's items are authorised
// as: TransactWriteItems and TransactGetItems are no IAM actions.
var transactActions = map[string]string{
	"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem",
	"ConditionCheck": "ConditionCheckItem", "Get": "GetItem",
}

// dynamoRequests returns the authorisations a DynamoDB call needs: its
// operation on its table, or on the table's index for a Query or Scan
// with IndexName; a batch's operation on each table of RequestItems; each
// item of a transaction as its own action on its table. A call that names
// no table (ListTables) is on "*". A request that does not parse needs
// none: DynamoDB refuses it anyway.
func dynamoRequests(op string, body []byte) []request {
	var c dynamoCall
	if json.Unmarshal(body, &c) != nil {
		return nil
	}
	switch {
	case op == "TransactWriteItems" || op == "TransactGetItems":
		var rs []request
		for _, it := range c.TransactItems {
			for kind, x := range it {
				rs = append(rs, request{"dynamodb:" + cmp.Or(transactActions[kind], kind), tableARN(x.TableName)})
			}
		}
		return rs
	case c.RequestItems != nil:
		var rs []request
		for _, t := range slices.Sorted(maps.Keys(c.RequestItems)) {
			rs = append(rs, request{"dynamodb:" + op, tableARN(t)})
		}
		return rs
	case c.TableName == "":
		return []request{{"dynamodb:" + op, "*"}}
	}
	res := tableARN(c.TableName)
	if c.IndexName != "" {
		res += "/index/" + c.IndexName
	}
	return []request{{"dynamodb:" + op, res}}
}

// sqsBatchActions are the IAM actions of SQS's batch operations: each is
// authorised as its single form.
var sqsBatchActions = map[string]string{
	"SendMessageBatch":             "SendMessage",
	"DeleteMessageBatch":           "DeleteMessage",
	"ChangeMessageVisibilityBatch": "ChangeMessageVisibility",
}

// sqsRequest returns the authorisation an SQS call (JSON protocol) needs:
// its operation on the queue its QueueUrl or QueueName names, or on "*"
// when it names none (ListQueues).
func (p *policies) sqsRequest(op string, body []byte) request {
	var c struct{ QueueUrl, QueueName string }
	json.Unmarshal(body, &c)
	action := "sqs:" + cmp.Or(sqsBatchActions[op], op)
	name := cmp.Or(queueName(c.QueueUrl), c.QueueName)
	if name == "" {
		return request{action, "*"}
	}
	return request{action, cmp.Or(p.queueARNs[name], p.queueARNPrefix+name)}
}

// sqs refuses, before next sees them, the SQS calls that the template
// function who signed them may not make: AccessDenied, as SQS's JSON
// protocol answers it (400, the sender's fault).
func (g *grants) sqs(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if msg, denied := g.sqsDenial(r); denied {
			w.Header().Set("x-amzn-query-error", "AccessDenied;Sender")
			b, _ := json.Marshal(map[string]string{"__type": "com.amazon.coral.service#AccessDeniedException", "message": msg})
			writeJSON(w, http.StatusBadRequest, b)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// sqsDenial returns the message of a denial when the template function
// who signed r may not make the call; a body it cannot read is left to
// the emulator.
func (g *grants) sqsDenial(r *http.Request) (string, bool) {
	pol, p := g.caller(r)
	if p == nil {
		return "", false
	}
	body, err := bufferBody(r)
	if err != nil {
		return "", false
	}
	req := pol.sqsRequest(strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "AmazonSQS."), body)
	if p.allows(req) {
		return "", false
	}
	return g.deny(p, req), true
}
