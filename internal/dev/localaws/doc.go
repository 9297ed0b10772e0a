// Package localaws starts hookline's embedded local AWS and creates every
// queue and table that infra/template.yaml declares.
//
// DynamoDB is github.com/truora/minidyn, served on a free 127.0.0.1 port
// (for the AWS CLI and other processes) and, to [Env.DynamoDB], in-process:
// that client's requests go through the SDK's whole stack and reach the
// handler without a socket. SQS is the pinned npm package local-aws-sqs, run as a
// child process (localstack/sqs-server.js) that exits when its parent does.
// When AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_SQS or AWS_ENDPOINT_URL_DYNAMODB is
// set, nothing is started for that service and the same resources are
// created at that endpoint instead (LocalStack, or anything AWS-compatible).
//
//	env, err := localaws.Start(ctx, localaws.Options{Logger: log})
//	if err != nil { ... }
//	defer env.Close()
//	url := env.QueueURL("payments")
//
// Emulator gaps (see docs/local-aws.md) are absorbed here, never in
// production code. A front handler before minidyn:
//
//   - runs TransactWriteItems and TransactGetItems itself, over minidyn's
//     single-item operations with per-item locks, in time proportional to
//     the items touched (minidyn's own copies every table it touches). It
//     keeps DynamoDB's semantics: all or nothing, serializable against
//     single-item reads and writes of the same items,
//     TransactionCanceledException with a reason per item, no two
//     operations on one item, at most 100 items, ClientRequestToken
//     idempotency for 10 minutes (token.go);
//   - answers contention and size as DynamoDB does (conflict.go,
//     itemsize.go): a transaction that meets a running one is cancelled
//     with TransactionConflict, a single-item write to an item a
//     transaction holds fails with TransactionConflictException, items
//     over 400 KB and transactions over 4 MB are refused;
//   - meters every partition key value of a table and of each global
//     secondary index at DynamoDB's per-partition limit, 1,000 write
//     units or 3,000 read units a second as one budget, with units from
//     item sizes by DynamoDB's rules and index writes by projection
//     (capacity*.go); past it, ProvisionedThroughputExceededException with
//     ThrottlingReasons, a transaction cancelled with ThrottlingError, a
//     batch's requests unprocessed. ReturnConsumedCapacity is answered,
//     and [Env.Capacity] counts the units and throttles.
//     HOOKLINE_LOCAL_AWS_MODEL=off ([Options.NoModel]) turns all of this
//     off for a baseline;
//   - answers PutItem ReturnValues=ALL_OLD with the replaced item, and a
//     failed condition with ReturnValuesOnConditionCheckFailure=ALL_OLD
//     with the item that failed it (PutItem, UpdateItem, DeleteItem and a
//     transaction's cancellation reason);
//   - keeps each table as 64 minidyn tables (shards) by partition key, each
//     shard in its own minidyn engine, because minidyn re-sorts a table's
//     keys on every insert and runs every operation of an engine behind one
//     lock;
//   - keeps only the most recently written items (1,024, [Options.HotItems])
//     in minidyn, whose items are maps of pointers that the garbage
//     collector marks in every cycle, and the rest as JSON, which it does
//     not scan; an item goes back into minidyn before any operation on it,
//     and a table's items all do at its first Query or Scan (spill.go);
//   - keeps items past their TTL, as DynamoDB does until it gets to them
//     (days), or with [Options.ExpireItems] deletes each within about a
//     second of its expiry, so that a long run's memory stays flat
//     (expiry.go);
//   - answers what the AWS CLI asks when an operator inspects the tables:
//     ListTables, DescribeTable's TableStatus, Describe/UpdateTimeToLive,
//     DescribeContinuousBackups and Scan Select=COUNT.
//
// minidyn's missing CRC32 header is handled by the client
// (see [awsconf.DynamoDB]).
//
// HOOKLINE_LOCAL_AWS_LATENCY (e.g. "5ms") adds that much to every call the
// embedded DynamoDB and SQS answer, so that benchmarks can model real AWS
// round trips ([Options.Latency]).
package localaws
