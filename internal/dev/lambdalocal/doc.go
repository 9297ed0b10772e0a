// Package lambdalocal runs Lambda handlers locally the way AWS invokes them:
// an API Gateway HTTP API (payload v2), an SQS event source mapping and an
// EventBridge schedule.
//
// Each adapter reproduces what AWS does around a handler, because the
// exactly-once guarantees depend on it: the HTTP adapter passes the raw body
// byte for byte; the SQS adapter deletes only the records a handler does not
// list in batchItemFailures and fails the whole batch on an error or a
// deadline overrun; every invocation carries a Lambda deadline and request
// ID through [lambdacontext].
//
// Every invocation's goroutine wears the profiler label [FunctionLabel]
// with its function's logical ID, and an event source's pollers wear
// [PartLabel]=[PartEventSource], so that a CPU profile of the one local
// process tells each function's time apart from the rest.
//
// An [HTTPAPI] is an http.Handler: serve it on a local port, or call it
// directly. See the package example and that of [NewHTTPAPI].
package lambdalocal
