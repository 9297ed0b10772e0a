// Package admission answers a workload's producers before they start new
// work: `GET /workloads/{id}/admission` on the HTTP API.
//
//	200 {"allowed":true,"status":"active","attributed":640,"cap":1000}
//	423 {"allowed":false,"reason":"spend_cap","status":"paused","attributed":1012,"cap":1000}
//	404 {"error":"unknown_workload"}
//
// When the table cannot be read the answer is 503 with Retry-After: 1. The
// example of [Handler.Handle] produces the answers above.
//
// The function has read-only access to the workloads table.
package admission
