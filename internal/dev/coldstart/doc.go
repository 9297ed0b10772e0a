// Package coldstart measures what a Lambda cold start costs each function
// in infra/template.yaml: the size of its bootstrap as `make build` ships it
// (linux/arm64, -ldflags "-s -w"), and its init time under the AWS Lambda
// runtime interface emulator. Both are reported beside a baseline measured
// in the same run: the unstripped build for size, and a bootstrap that only
// calls lambda.Start for init time.
//
// Run it with `make bench`, or:
//
//	go test -run '^$' -bench Bootstrap -benchtime 1x ./internal/dev/coldstart
package coldstart
