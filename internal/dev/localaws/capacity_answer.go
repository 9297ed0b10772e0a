package localaws

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
)

// The messages DynamoDB gives when an on-demand table or index is
// throttled (API reference, TransactWriteItems errors, cancellation
// reason ThrottlingError; every table of the template is on-demand).
const (
	throttleMessage = "Throughput exceeds the current capacity of your table or index. DynamoDB is automatically " +
		"scaling your table or index so please try again shortly. If exceptions persist, check if you have a hot key: " +
		"https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html."
	indexThrottleMessage = "Throughput exceeds the current capacity for one or more global secondary indexes. " +
		"DynamoDB is automatically scaling your index so please try again shortly."
)

// localARN is the ARN prefix of the embedded DynamoDB's tables.
const localARN = "arn:aws:dynamodb:us-east-1:000000000000:table/"

// throttlingReason is one entry of ThrottlingReasons (API reference,
// "ThrottlingReason",
// https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_ThrottlingReason.html):
// ResourceType + OperationType + LimitType, and the resource's ARN. A
// partition key value over its budget is KeyRangeThroughputExceeded.
type throttlingReason struct {
	Reason   string `json:"reason"`
	Resource string `json:"resource"`
}

func reasonOf(c charge) throttlingReason {
	r := throttlingReason{Reason: "Table", Resource: localARN + c.table}
	if c.index != "" {
		r.Reason, r.Resource = "Index", r.Resource+"/index/"+c.index
	}
	if c.write > 0 {
		r.Reason += "Write"
	} else {
		r.Reason += "Read"
	}
	r.Reason += "KeyRangeThroughputExceeded"
	return r
}

// throttleError answers a request refused for want of capacity:
// ProvisionedThroughputExceededException (400) with a reason for each
// table and index that lacked it. The SDK retries it with backoff.
func throttleError(cs []charge, which []int) (int, []byte) {
	var reasons []throttlingReason
	for _, i := range which {
		if r := reasonOf(cs[i]); !slices.Contains(reasons, r) {
			reasons = append(reasons, r)
		}
	}
	b, _ := json.Marshal(map[string]any{
		"__type":            "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
		"message":           throttleMessage,
		"ThrottlingReasons": reasons,
	})
	return http.StatusBadRequest, b
}

// throttleCancel cancels a transaction of n items of which some lacked
// capacity: reason ThrottlingError for those, None for the rest, as
// DynamoDB answers (API reference, TransactWriteItems and
// TransactGetItems, TransactionCanceledException). Nothing is applied.
func throttleCancel(n int, cs []charge, which []int) (int, []byte) {
	reasons := make([]reason, n)
	codes := make([]string, n)
	for i := range n {
		reasons[i], codes[i] = reason{Code: "None"}, "None"
	}
	for _, w := range which {
		c := cs[w]
		msg := throttleMessage
		if c.index != "" {
			msg = indexThrottleMessage
		}
		if reasons[c.owner].Code == "ThrottlingError" && c.index != "" {
			continue // the table's own message stands
		}
		reasons[c.owner], codes[c.owner] = reason{Code: "ThrottlingError", Message: msg}, "ThrottlingError"
	}
	return cancel(reasons, codes)
}

// capUnits is a ConsumedCapacity's units for a table or an index.
type capUnits struct {
	CapacityUnits      float64
	ReadCapacityUnits  float64 `json:",omitempty"`
	WriteCapacityUnits float64 `json:",omitempty"`
}

func (u *capUnits) add(c charge) {
	u.CapacityUnits += c.read + c.write
	u.ReadCapacityUnits += c.read
	u.WriteCapacityUnits += c.write
}

// consumedCapacity is DynamoDB's ConsumedCapacity (API reference,
// "ConsumedCapacity"): TOTAL gives the table's name and the units of the
// table and its indexes together; INDEXES adds the table's own and each
// index's.
type consumedCapacity struct {
	TableName string
	capUnits
	Table                  *capUnits           `json:",omitempty"`
	GlobalSecondaryIndexes map[string]capUnits `json:",omitempty"`
}

// consumption is the ConsumedCapacity of charges, one per table in table
// order, for ReturnConsumedCapacity mode (TOTAL or INDEXES).
func consumption(cs []charge, mode string) []consumedCapacity {
	by := map[string]*consumedCapacity{}
	var names []string
	for _, c := range cs {
		cc := by[c.table]
		if cc == nil {
			cc = &consumedCapacity{TableName: c.table}
			if mode == "INDEXES" {
				cc.Table = &capUnits{}
			}
			by[c.table] = cc
			names = append(names, c.table)
		}
		cc.add(c)
		switch {
		case mode != "INDEXES":
		case c.index == "":
			cc.Table.add(c)
		default:
			if cc.GlobalSecondaryIndexes == nil {
				cc.GlobalSecondaryIndexes = map[string]capUnits{}
			}
			u := cc.GlobalSecondaryIndexes[c.index]
			u.add(c)
			cc.GlobalSecondaryIndexes[c.index] = u
		}
	}
	slices.Sort(names)
	out := make([]consumedCapacity, len(names))
	for i, n := range names {
		out[i] = *by[n]
	}
	return out
}

// withConsumed adds ConsumedCapacity to a successful answer when the
// request asked for it (ReturnConsumedCapacity TOTAL or INDEXES): one
// object for an item operation or a Query, a list (list true) for batches
// and transactions.
func withConsumed(status int, out []byte, cs []charge, mode string, list bool) (int, []byte) {
	if status != http.StatusOK || (mode != "TOTAL" && mode != "INDEXES") {
		return status, out
	}
	ccs := consumption(cs, mode)
	var v any = ccs
	if !list {
		if len(ccs) == 0 {
			return status, out
		}
		v = ccs[0]
	}
	field, err := json.Marshal(v)
	if err != nil {
		return internalError(err)
	}
	body := bytes.TrimRight(out, " \n")
	if len(body) < 2 || body[len(body)-1] != '}' {
		return status, out
	}
	var b bytes.Buffer
	b.Write(body[:len(body)-1])
	if strings.TrimSpace(string(body[1:len(body)-1])) != "" {
		b.WriteByte(',')
	}
	b.WriteString(`"ConsumedCapacity":`)
	b.Write(field)
	b.WriteByte('}')
	return status, b.Bytes()
}

// returnConsumed reads a request's ReturnConsumedCapacity.
func returnConsumed(body []byte) string {
	if !bytes.Contains(body, []byte(`"ReturnConsumedCapacity"`)) {
		return ""
	}
	var in struct{ ReturnConsumedCapacity string }
	json.Unmarshal(body, &in)
	return in.ReturnConsumedCapacity
}

// meterTake takes charges from the partitions with the model on; with it
// off nothing is metered.
func (d *dynamoFront) meterTake(cs []charge) (throttled []int) {
	if !d.model {
		return nil
	}
	return d.meter.take(cs)
}
