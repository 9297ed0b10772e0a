# hookline: `make` lists the targets.
SHELL := /bin/bash
GO ?= go
FUNCTIONS := $(notdir $(wildcard functions/*))
NODE_MODULES := localstack/node_modules/.package-lock.json
TEST_TIMEOUT ?= 25m
# Most parallel tests wait on clocks (visibility timeouts, leases, settle
# horizons) on local AWS of their own, so more of them run at once than
# the two cores go test allows by default.
TEST_PARALLEL ?= 8

.DEFAULT_GOAL := help

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  make %-8s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

$(NODE_MODULES): localstack/package.json localstack/package-lock.json
	cd localstack && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

.PHONY: deps
deps: $(NODE_MODULES) ## Install what the build and tests need (Go modules and tools, stripe-mock among them; the pinned SQS emulator).
	$(GO) mod download
	cd internal/usagein/ceoracle && $(GO) mod download
	cd internal/openmeter/omoracle && $(GO) mod download

.PHONY: run
# run builds the CLI and execs it rather than `go run`: go run exits 1 when
# Ctrl-C interrupts it, whatever its program returns, and make would then
# report an error for a clean stop.
run: deps ## Run the whole system locally on embedded AWS (Ctrl-C stops it); RUN_FLAGS="..." passes flags to hookline run.
	$(GO) build -o bin/hookline ./cmd/hookline
	exec ./bin/hookline run $(RUN_FLAGS)

.PHONY: oncall
oncall: ## Build the on-call binary (bin/oncall/hookline): workload, event, dlq and intake, with no local AWS, lab or profiler linked.
	$(GO) build -tags oncall -o bin/oncall/hookline ./cmd/hookline

.PHONY: test
test: deps ## Run every test against the embedded local AWS (or AWS_ENDPOINT_URL), each fault model and drill at its bounded size (make soak runs them long).
	$(GO) vet ./...
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) -parallel $(TEST_PARALLEL) ./...
	@# The CloudEvents SDK checks the usage door from a module of its own.
	cd internal/usagein/ceoracle && $(GO) vet ./... && $(GO) test -count=1 ./...
	cd internal/openmeter/omoracle && $(GO) vet ./... && $(GO) test -count=1 ./...

.PHONY: bench
bench: deps ## Run the benchmarks (8-11 min on 2 cores); every ratio names what it divides by, measured in the same run (docs/benchmarks.md).
	@echo "== bootstraps: size as shipped (linux/arm64, -s -w) in bytes and in MB (10^6 bytes), x-unstripped = size / the unstripped build's, x-10MB-goal = size / 10,000,000 bytes; init-ms under the Lambda RIE, x-minimal-init = init / a bare lambda.Start bootstrap's, same run"
	$(GO) test -run '^$$' -bench Bootstrap -benchtime 1x ./internal/dev/coldstart
	@echo "== verify + parse, 1 KiB body, two active secrets (ns/op, B/op, allocs/op); no ratio"
	$(GO) test -run '^$$' -bench 'VerifyStandard|VerifyStripe|ParseEnvelope' -benchmem ./pkg/webhook
	@echo "== verify + parse against the peers, 1 KiB body: x-<peer> = hookline's verify + parse ns / the peer library's verify-only ns, best of 5 interleaved rounds, same run"
	$(GO) test -run '^$$' -bench VerifyPeers ./pkg/webhook
	@echo "== claims: idempotency claim + complete on the local DynamoDB, one caller and parallel (ops/s), and a cached replay (ops/s); no ratio"
	$(GO) test -run '^$$' -bench . -benchtime 2000x ./pkg/idempotency
	@echo "== provider client against the simulator, serial and parallel (req/s); no ratio"
	$(GO) test -run '^$$' -bench . -benchtime 2s ./pkg/provider
	@echo "== the fold (records/s): ratio_100k/1k = rate with 100,000 ledger entries / with 1,000; ratio_5ms/0ms = rate with 5 ms added to every call / with none; both halves in the same run"
	$(GO) test -run '^$$' -bench Fold -benchtime 2000x ./internal/reconcile
	@echo "== the fold with bucket heads (records/s): webhook records of a Stripe sums source over 64 workloads, through Ledger.ApplyBatch in the usage event source's batches; ratio_100k/1k = rate with 100,000 ledger entries / with 1,000; ratio_month/lifetime = rate with every workload on a UTC month period / on a lifetime total (1,000 entries each); both halves of each in mirrored rounds of the same run"
	$(GO) test -run '^$$' -bench BucketFold -benchtime 2000x ./internal/spend
	@echo "== payments end to end, as hookline lab measures its ceilings: full/bare = full path / bare pipeline, means of 4 bursts each in mirrored rounds after a 5 s warm-up, same run"
	$(GO) test -run '^$$' -bench E2EPayments -benchtime 1x ./internal/paymentworker
	@echo "== usage, a burst of 1,000 (events/s attributed, event->page p50 and max); no ratio"
	$(GO) test -run '^$$' -bench E2EUsage -benchtime 1x ./internal/dev/localrun
	@echo "== usage paced at 500/s, open loop: attributed/offered = attributed rate / offered rate; event->page p50/p99"
	$(GO) test -run '^$$' -bench UsagePaced -benchtime 1x ./internal/dev/localrun
	@echo "== one hot workload paced at 500/s: ratio_on/off = rate with the local DynamoDB's AWS limits on / off, same run; event->ledger p99, dead letters"
	$(GO) test -run '^$$' -bench HotWorkload -benchtime 1x ./internal/dev/localrun
	@echo "== one hot workload paced at 500/s with bucket heads (CloudEvents on a door source of a Stripe sums source): ratio_on/off = rate with the local DynamoDB's AWS limits on / off, same run; event->ledger p99, dead letters, head writes per event"
	$(GO) test -run '^$$' -bench HotBucket -benchtime 1x ./internal/dev/localrun
	@echo "== one hot workload paced at 500/s with a UTC day period, the run's clock moved across the day's end at the middle event: ratio_on/off = rate with limits on while crossing / rate with limits off on a lifetime total; ratio_period_off/off = rate with limits off while crossing / the same divisor; all three measured in the same run; event->ledger p99, the clock move's wait, dead letters"
	$(GO) test -run '^$$' -bench HotPeriod -benchtime 1x ./internal/dev/localrun
	@echo "== a sweep of sums: 10,000 workloads (1% near cap, 9% active) against Stripe's face limited to 250 calls/s; calls and reads a run, reads/covered per tier; then the capacity plan for 10,000 workloads on Stripe and on OpenAI worked from them (a run's time = its calls at the provider's limit)"
	$(GO) test -run '^$$' -bench SumsSweep -benchtime 1x ./internal/reconcile

.PHONY: lab
lab: deps ## Payments lab: idempotency off, on, a 3x spike, and on with a 5.8 KB Stripe invoice.finalized (charged once per webhook), 500 webhooks/s for 60 s each; writes docs/lab/.
	$(GO) run ./cmd/hookline lab --suite --suite-payload testdata/payloads/stripe-invoice-finalized.json --rate 500 --duration 60s --plan-rate 5000 --out docs/lab

.PHONY: lab-serve
lab-serve: deps ## The live lab: 500 webhooks/s, 0.2% of acks lost, idempotency off, and a page with a copilot at http://127.0.0.1:8090/ (Ctrl-C stops it).
	$(GO) build -o bin/hookline ./cmd/hookline
	exec ./bin/hookline lab serve

.PHONY: lab-shots
lab-shots: deps ## Drive the live lab's page in headless Chromium and save its screenshots to docs/lab/ (needs chromium).
	HOOKLINE_LAB_SHOTS=$(CURDIR)/docs/lab $(GO) test -count=1 -run '^TestLivePageInBrowser$$' -v ./internal/dev/lab

.PHONY: soak
# make test runs the same tests smaller: the payment fault model at 2,000
# events per profile, the lost-acknowledgement drill at 2,500 a run, the
# end-to-end model at 3,000 events (a tenth of its usage metered with
# Stripe), the fold at 10,000 records and the max rule's property test at
# 6 seeds, with no matrix.
soak: deps ## The long drills: payment fault model (20,000 events per profile, each provider fault alone), lost acks (10,000 a run), end to end (20,000 events with Stripe's sums, each AWS fault alone), fold of 100,000 records, max rule over 200 seeds.
	$(GO) test -count=1 -timeout 60m -parallel $(TEST_PARALLEL) -v ./internal/paymentworker -run 'TestFaultModel$$|TestFaultMatrix$$|TestDrillLostAcknowledgements$$' -args -model-events 20000 -model-matrix -lost-ack-events 10000
	$(GO) test -count=1 -timeout 60m -parallel $(TEST_PARALLEL) -v ./internal/dev/localrun -run 'TestEndToEndFaultModel$$|TestEndToEndFaultMatrix$$' -args -model-events 20000 -model-matrix
	$(GO) test -count=1 -timeout 30m -v ./internal/reconcile -run 'TestFoldManyRecordsInOneRun$$' -args -fold-records 100000
	$(GO) test -count=1 -timeout 30m -v ./internal/spend -run 'TestBucketMaxRuleProperty$$' -args -bucket.seeds 200

.PHONY: lint
lint: ## gofmt check and go vet.
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

.PHONY: build
build: ## Build dist/<function>/bootstrap and dist/<function>.zip for linux/arm64.
	@for fn in $(FUNCTIONS); do \
		echo "build $$fn"; \
		GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build -trimpath -tags lambda.norpc -ldflags "-s -w" -o dist/$$fn/bootstrap ./functions/$$fn || exit 1; \
		$(GO) run ./cmd/lambdazip dist/$$fn dist/$$fn.zip || exit 1; \
	done

.PHONY: deploy
deploy: build ## Deploy with AWS SAM (needs the sam CLI and AWS credentials; never run in CI).
	@command -v sam >/dev/null || { echo "install the AWS SAM CLI first: https://docs.aws.amazon.com/serverless-application-model/"; exit 1; }
	sam deploy --template-file infra/template.yaml --stack-name $${STACK:-hookline} \
		--capabilities CAPABILITY_IAM --resolve-s3 --guided

.PHONY: clean
clean: ## Remove build output.
	rm -rf dist bench.out
