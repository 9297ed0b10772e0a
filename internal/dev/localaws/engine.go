package localaws

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/truora/minidyn/server"
)

// av is minidyn's wire form of an attribute value.
type av = server.AttributeValue

// item is an item, a key or a map of expression values, as minidyn takes
// them.
type item = map[string]*av

// engine is minidyn's engine (server.Client), called in-process. The
// front calls its typed operations directly for the item operations it
// runs itself (no JSON between the front and minidyn), and serves the
// JSON API with the same request and response shapes as minidyn's own
// HTTP handler for everything it passes through.
type engine struct {
	c *server.Client
}

func newEngine() engine { return engine{c: server.NewClient()} }

// serveJSON runs one operation from its JSON body, as minidyn's HTTP
// handler would, and returns the status and JSON body of the answer.
func (e engine) serveJSON(op string, body []byte) (int, []byte) {
	switch op {
	case "CreateTable":
		return runJSON(body, e.c.CreateTable)
	case "UpdateTable":
		return runJSON(body, e.c.UpdateTable)
	case "DeleteTable":
		return runJSON(body, e.c.DeleteTable)
	case "DescribeTable":
		return runJSON(body, e.c.DescribeTable)
	case "PutItem":
		return runJSON(body, e.c.PutItem)
	case "DeleteItem":
		return runJSON(body, e.c.DeleteItem)
	case "UpdateItem":
		return runJSON(body, e.c.UpdateItem)
	case "GetItem":
		return runJSON(body, e.c.GetItem)
	case "Query":
		return runJSON(body, e.c.Query)
	case "Scan":
		return runJSON(body, e.c.Scan)
	case "BatchWriteItem":
		return runJSON(body, e.c.BatchWriteItem)
	case "BatchGetItem":
		return runJSON(body, e.c.BatchGetItem)
	}
	return http.StatusBadRequest, []byte("unsupported operation\n")
}

// runJSON decodes a request, runs it and encodes the answer.
func runJSON[In, Out any](body []byte, op func(context.Context, *In) (Out, error)) (int, []byte) {
	in := new(In)
	if err := json.Unmarshal(body, in); err != nil {
		return wireError(err)
	}
	out, err := op(context.Background(), in)
	if err != nil {
		return wireError(err)
	}
	return encodeOK(out)
}

// encodeOK answers 200 with v, encoded as minidyn's handler encodes it.
func encodeOK(v any) (int, []byte) {
	b, err := marshalKeepingEmpty(v)
	if err != nil {
		return internalError(err)
	}
	return http.StatusOK, b
}

// wireError is the JSON error answer for an error of minidyn's engine, in
// the shape its HTTP handler gives.
func wireError(err error) (int, []byte) {
	if ccf, ok := errors.AsType[*ddbtypes.ConditionalCheckFailedException](err); ok {
		return conditionFailed(aws.ToString(ccf.Message), wireItem(ccf.Item))
	}
	status, typ, msg := http.StatusBadRequest, "InternalFailure", err.Error()
	if apiErr, ok := err.(interface {
		ErrorCode() string
		ErrorMessage() string
	}); ok {
		typ, msg = apiErr.ErrorCode(), apiErr.ErrorMessage()
	}
	if typ == "InternalServerError" {
		status = http.StatusInternalServerError
	}
	b, _ := json.Marshal(map[string]string{"__type": typ, "message": msg})
	return status, b
}

// conditionFailed answers ConditionalCheckFailedException with msg and,
// unless it is nil, the item that failed the condition.
func conditionFailed(msg string, it item) (int, []byte) {
	body := struct {
		Type    string `json:"__type"`
		Message string `json:"message"`
		Item    item   `json:"Item,omitempty"`
	}{"ConditionalCheckFailedException", msg, it}
	b, _ := json.Marshal(body)
	return http.StatusBadRequest, b
}

// wireItem converts an SDK item to minidyn's wire form.
func wireItem(in map[string]ddbtypes.AttributeValue) item {
	if len(in) == 0 {
		return nil
	}
	out := make(item, len(in))
	for k, v := range in {
		out[k] = wireValue(v)
	}
	return out
}

func wireValue(v ddbtypes.AttributeValue) *av {
	switch v := v.(type) {
	case *ddbtypes.AttributeValueMemberS:
		return &av{S: aws.String(v.Value)}
	case *ddbtypes.AttributeValueMemberN:
		return &av{N: aws.String(v.Value)}
	case *ddbtypes.AttributeValueMemberB:
		return &av{B: v.Value}
	case *ddbtypes.AttributeValueMemberBOOL:
		return &av{BOOL: aws.Bool(v.Value)}
	case *ddbtypes.AttributeValueMemberNULL:
		return &av{NULL: aws.Bool(v.Value)}
	case *ddbtypes.AttributeValueMemberSS:
		return &av{SS: aws.StringSlice(v.Value)}
	case *ddbtypes.AttributeValueMemberNS:
		return &av{NS: aws.StringSlice(v.Value)}
	case *ddbtypes.AttributeValueMemberBS:
		return &av{BS: v.Value}
	case *ddbtypes.AttributeValueMemberL:
		l := make([]*av, len(v.Value))
		for i, e := range v.Value {
			l[i] = wireValue(e)
		}
		return &av{L: l}
	case *ddbtypes.AttributeValueMemberM:
		return &av{M: wireItem(v.Value)}
	}
	return &av{}
}

// scalar returns the type and the wire text of a scalar key value (S, N,
// or B as base64), or false.
func scalar(v *av) (string, string, bool) {
	switch {
	case v == nil:
		return "", "", false
	case v.S != nil:
		return "S", *v.S, true
	case v.N != nil:
		return "N", *v.N, true
	case v.B != nil:
		return "B", base64.StdEncoding.EncodeToString(v.B), true
	}
	return "", "", false
}

// get reads an item of a (physical) table consistently; nil when absent.
func (e engine) get(table string, key item) (item, error) {
	out, err := e.c.GetItem(context.Background(), &server.GetItemInput{TableName: aws.String(table), Key: key,
		ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, err
	}
	return out.Item, nil
}
