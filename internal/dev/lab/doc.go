// Package lab runs experiments on the whole local payment pipeline and
// reports what held and what broke:
//
//	HTTP API -> receiver -> SQS -> event-source adapter -> payment worker -> provider simulator
//
// [Run] offers signed webhooks open loop, on a schedule at [Config.Rate]
// (and a spike, if asked), so latency includes queueing; loses a share of
// SQS acknowledgements; and runs the worker with its idempotency registry
// on or off. It measures, per second, what was offered, accepted and
// charged, duplicate charges and redeliveries, the queue's depth and the
// age of the oldest event not yet settled, and webhook -> charge p50 and
// p99; and in total, the success ratio, lost events, duplicates (and what
// they come to in a day at the measured rate), AWS calls per event, the
// DynamoDB capacity units per event that the local DynamoDB's capacity
// model metered (by table and index, and by call of one event: [Units],
// [CallUnits]), and the cost of a million events priced from those units
// and calls with a dated price table ([Prices]).
//
// [Config.Payload] chooses the webhooks' body ([LoadPayload],
// [SizedPayload]): the intake record holds it, so its size sets the write
// units. testdata/payloads holds a Stripe invoice.finalized event and an
// Adyen AUTHORISATION notification, both of which act. Each webhook
// carries its own event ID and effect key, so each is one charge; a body
// its rule does not act on (a Stripe invoice.paid) is refused at load
// with [ErrBadPayload], and a probe webhook that is not charged stops the
// run with [ErrProbeUnsettled], saying what became of it.
//
// It also splits webhook -> charge into legs (sender, receiver, to the
// worker, worker: [Stage]) and reports the Go runtime's collector share
// and live heap ([Runtime]), since everything local shares one process.
//
// In the same run and on the same emulators it measures two ceilings: the
// full path saturated (a burst from 32 connections) and a bare pipeline
// that replays the AWS calls the functions made for one probe webhook
// ([RecordScript], [BareCeiling]): the same requests with no HTTP,
// adapters, provider or function code. Each is measured four times, in
// two mirrored rounds (full, bare, bare, full), and the report gives the
// means and every burst. Full ÷ bare is the headline ratio; no figure is
// divided by a constant. [MeasureCeilings] measures the ceilings alone,
// the same way, after a warm-up instead of the paced run: make bench
// prints it.
//
// Each burst is CPU-profiled on its own, and the samples are split by the
// goroutines' profiler labels ([CPUShare]): the functions (or the bare
// replays), the local HTTP API, the event source, the sender and the
// provider simulator, the rest of the process, and the machine's busy time
// outside it. The sender and the simulator are the provider's side, which
// the bare pipeline does not have; the report gives the ratio with their
// share given back beside the measured one, and the 0.9× goal is judged on
// the measured one.
//
// [Findings] names each goal a run missed, with the figure, why it broke
// and the fix; [WriteReport] writes report.md, report.json and SVG plots.
//
// [StartLive] runs the same pipeline until Close, with knobs that change
// while it runs (idempotency, rate, a spike, the share of lost
// acknowledgements, the provider's profile), and [Live.Handler] serves
// the live page: the pipeline with its figures, charts updated every
// second from server-sent events, the design's capacity estimate beside
// the measured figures, before and after each change, and a copilot
// ([ParseCommand], [Live.Ask]) whose "what broke?" answers with the same
// [Findings]. The handler answers only the lab's own page and the
// machine's scripts: a Host other than the loopback at its port, or
// another page's Origin, is refused with 403, and a command that is not
// application/json with 415.
//
//	live, err := lab.StartLive(ctx, lab.LiveConfig{Rate: 500, LostAcks: 0.002})
//	if err != nil {
//		return err
//	}
//	defer live.Close()
//	reply, err := live.Ask("turn on idempotency")
//	http.ListenAndServe("127.0.0.1:8090", live.Handler())
package lab
