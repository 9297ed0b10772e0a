// Package admission answers a workload's producers before they start new
// work: `GET /workloads/{id}/admission` on the HTTP API.
//
//	200 {"allowed":true,"status":"active","attributed":640,"cap":1000}
//	423 {"allowed":false,"reason":"spend_cap","status":"paused","attributed":1012,"cap":1000}
//	404 {"error":"unknown_workload"}
//	400 {"error":"invalid_workload_id"}
//
// A 400 answers an ID outside [spend.WorkloadIDPattern] that names no
// workload; a workload created before IDs had an alphabet is answered as
// any other.
// When the table cannot be read the answer is 503 with Retry-After: 1. The
// example of [Handler.Handle] produces the answers above.
//
// The function has read-only access to the workloads table.
package admission
