package localaws

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
)

// dynamoWrites are the DynamoDB operations the fault layer treats as
// writes.
var dynamoWrites = map[string]bool{
	"PutItem": true, "UpdateItem": true, "DeleteItem": true,
	"TransactWriteItems": true, "BatchWriteItem": true,
}

// errDropped is the transport error an in-process client sees when the
// fault layer drops the connection of a committed write.
var errDropped = errors.New("localaws: connection dropped by the fault layer")

// dynamo wraps the embedded DynamoDB handler with the DynamoDB faults. It
// serves both the HTTP port and the in-process client: a dropped
// connection is an aborted handler (http.ErrAbortHandler), which the HTTP
// server turns into a closed connection and [inProcess] into a transport
// error.
func (l *faultLayer) dynamo(next http.Handler) http.Handler {
	if l == nil || !l.dynamoOn() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_20120810.")
		if !dynamoWrites[op] {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			writeAPIError(w, http.StatusBadRequest, "SerializationException", "unreadable request body")
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		req := FaultRequest{Operation: op, Table: requestTable(body), Attempt: attemptOf(r.Header)}
		id := digest(body)
		switch {
		case l.fire(FaultDDBError, req, id):
			writeAPIError(w, http.StatusInternalServerError, "InternalServerError", "Internal server error")
		case l.fire(FaultDDBThrottle, req, id):
			writeThrottle(w, req.Table)
		case l.fire(FaultDDBAmbiguous, req, id):
			next.ServeHTTP(&recorder{header: http.Header{}}, r)
			if l.draw("drop", op, id, req.Attempt) < 0.5 {
				panic(http.ErrAbortHandler)
			}
			writeAPIError(w, http.StatusInternalServerError, "InternalServerError", "Internal server error")
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// writeThrottle answers as DynamoDB throttles a write to one partition
// key: ProvisionedThroughputExceededException with its throttling reason
// (KeyRangeThroughputExceeded), naming the table when the request does.
func writeThrottle(w http.ResponseWriter, table string) {
	reason := map[string]string{"reason": "TableWriteKeyRangeThroughputExceeded"}
	if table != "" {
		reason["resource"] = "arn:aws:dynamodb:us-east-1:000000000000:table/" + table
	}
	b, _ := json.Marshal(map[string]any{
		"__type":            "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
		"message":           "The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API.",
		"ThrottlingReasons": []map[string]string{reason},
	})
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(http.StatusBadRequest)
	w.Write(b)
}

func (l *faultLayer) dynamoOn() bool {
	return l.cfg.Rates[FaultDDBAmbiguous] > 0 || l.cfg.Rates[FaultDDBError] > 0 || l.cfg.Rates[FaultDDBThrottle] > 0
}

// requestTable returns the TableName of a single-item request, "" for others.
func requestTable(body []byte) string {
	var in struct{ TableName string }
	json.Unmarshal(body, &in)
	return in.TableName
}

// digest identifies a request by its body: an SDK retry sends the same
// bytes, a different write does not.
func digest(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:16])
}
