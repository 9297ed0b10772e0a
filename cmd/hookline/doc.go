// Command hookline is the operator's tool, built on cobra. On-call commands
// explain pages, administer workloads, inspect and redrive dead-letter
// queues and replay intake; developer commands run the system locally,
// send signed test webhooks and usage, and move the local run's clock. The
// grammar is noun-verb, each command has its own flags, and the deployment
// template is built in, so it works from any directory.
//
// The default build is the developer's, with run, lab and dev. The on-call
// build (go build -tags oncall, or make oncall) has only the on-call
// commands and links none of the local AWS, simulators, lab or profilers;
// TestOnCallBuildLinksNoHarness holds that rule.
//
//	hookline workload explain workload-7
//	hookline event explain evt_usage_ur_3
//	hookline dlq redrive payments-dlq --dry-run --skip-completed
//	hookline intake replay --source payments --since 2h --dry-run
//	hookline dev send-webhook --source payments --file testdata/payments/payment_requested.json
//	hookline dev clock advance 720h
//	hookline run
//	hookline help <command>
package main
