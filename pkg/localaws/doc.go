// Package localaws starts hookline's embedded local AWS and creates every
// queue and table that infra/template.yaml declares.
//
// DynamoDB is github.com/truora/minidyn, served in-process on a free
// 127.0.0.1 port. SQS is the pinned npm package local-aws-sqs, run as a
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
// production code: minidyn's empty TableStatus and missing UpdateTimeToLive,
// and its missing CRC32 header (see [awsconf.DynamoDB]).
package localaws
