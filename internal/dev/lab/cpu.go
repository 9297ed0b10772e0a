package lab

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/hookline/hookline/internal/dev/lambdalocal"
	"github.com/hookline/hookline/internal/dev/localrun"
	"github.com/hookline/hookline/internal/dev/providersim"
)

// partSender is the profiler label of the lab's sender goroutines (under
// localrun.PartLabel): the provider's side of the webhooks.
const partSender = "sender"

// partBare is the profiler label of the bare pipeline's goroutines.
const partBare = "bare"

// asSender runs f on the current goroutine labelled as the sender's, so
// that it and the connections it opens count as the sender's CPU.
func asSender(ctx context.Context, f func(context.Context)) {
	pprof.Do(ctx, pprof.Labels(localrun.PartLabel, partSender), f)
}

// CPUShare is how the machine's busy CPU went while a path's bursts ran,
// from a CPU profile of each burst (by the goroutines' profiler labels)
// and the kernel's count of the machine's busy time. Each share is a
// fraction of the machine's busy CPU.
type CPUShare struct {
	// Functions is the receiver's and the worker's invocations: their
	// code, their AWS SDK calls and the in-process DynamoDB they reach.
	Functions float64 `json:"functions,omitempty"`
	// Bare is the bare pipeline's replays of the same AWS calls.
	Bare float64 `json:"bare,omitempty"`
	// HTTPAPI is the local API Gateway's HTTP server and event mapping.
	HTTPAPI float64 `json:"http_api,omitempty"`
	// Sender and Simulator are the provider's side: the lab's sender and
	// the provider simulator's server. On AWS neither runs on the
	// functions' CPU; here they share the cores with everything else.
	Sender    float64 `json:"sender,omitempty"`
	Simulator float64 `json:"provider_simulator,omitempty"`
	// EventSource is the local event source's pollers: the worker's SQS
	// receives and deletes, which Lambda makes for it.
	EventSource float64 `json:"event_source,omitempty"`
	// OtherGo is the rest of the Go process: the collector's own workers,
	// the scheduler and the lab's observer.
	OtherGo float64 `json:"other_go"`
	// Outside is the CPU of everything but the Go process: mostly the
	// SQS emulator.
	Outside float64 `json:"outside_go"`
	// Busy is the machine's busy time as a fraction of all its cores'.
	Busy float64 `json:"machine_busy"`
	// PerEventMS is the machine's busy CPU per event, in milliseconds.
	PerEventMS float64 `json:"per_event_ms"`
}

// Harness is the provider's side: the sender's and the simulator's share.
func (c CPUShare) Harness() float64 { return c.Sender + c.Simulator }

func (c CPUShare) String() string {
	var parts []string
	for _, p := range []struct {
		name  string
		share float64
	}{{"functions", c.Functions}, {"bare replays", c.Bare}, {"local HTTP API", c.HTTPAPI}, {"sender", c.Sender}, {"provider simulator", c.Simulator},
		{"event source", c.EventSource}, {"rest of the Go process (collector, scheduler)", c.OtherGo}, {"outside it (the SQS emulator)", c.Outside}} {
		if p.share*c.PerEventMS >= 0.005 || (c.PerEventMS == 0 && p.share > 0) { // what prints as 0.00 ms is noise
			parts = append(parts, fmt.Sprintf("%s %.2f ms (%.0f%%)", p.name, p.share*c.PerEventMS, 100*p.share))
		}
	}
	return fmt.Sprintf("%.2f ms of CPU per event: %s; the machine was %.0f%% busy", c.PerEventMS, strings.Join(parts, ", "), 100*c.Busy)
}

// cpuMeter sums, over the stretches it measures, the CPU seconds of each
// part of the Go process, the machine's busy and total CPU seconds and
// the events the stretches carried. Its first failure (a CPU profile of
// the whole run is being taken, or the kernel's counts cannot be read)
// stops it for good.
type cpuMeter struct {
	parts       map[string]float64
	busy, total float64
	events      int
	buf         bytes.Buffer
	before      machineCPU
	failed      error
}

// begin starts a stretch; end(n) ends it, n events later. Both do nothing
// on a nil or failed meter.
func (m *cpuMeter) begin() {
	if m != nil && m.failed == nil {
		m.failed = m.start()
	}
}

func (m *cpuMeter) end(n int) {
	if m != nil && m.failed == nil {
		m.failed = m.stop()
		m.events += n
	}
}

func (m *cpuMeter) start() error {
	before, err := readMachineCPU()
	if err != nil {
		return err
	}
	m.buf.Reset()
	if err := pprof.StartCPUProfile(&m.buf); err != nil {
		return err
	}
	m.before = before
	return nil
}

func (m *cpuMeter) stop() error {
	pprof.StopCPUProfile()
	after, err := readMachineCPU()
	if err != nil {
		return err
	}
	p, err := profile.Parse(&m.buf)
	if err != nil {
		return fmt.Errorf("lab: cpu profile: %w", err)
	}
	parts, err := cpuByPart(p)
	if err != nil {
		return err
	}
	if m.parts == nil {
		m.parts = map[string]float64{}
	}
	for k, v := range parts {
		m.parts[k] += v
	}
	busy, total := cpuDelta(m.before, after)
	m.busy += busy
	m.total += total
	return nil
}

// cpuDelta is the machine's busy and total CPU seconds between two
// readings. The kernel's iowait count can go down (proc(5): "this value
// is not reliable"), so the idle time between them is never counted
// below zero: the machine is at most 100% busy.
func cpuDelta(before, after machineCPU) (busy, total float64) {
	busy = after.busy - before.busy
	idle := (after.total - after.busy) - (before.total - before.busy)
	return busy, busy + max(0, idle)
}

// share is what the stretches measured, or false when none was.
func (m *cpuMeter) share() (CPUShare, bool) {
	if m.failed != nil || m.busy <= 0 || m.total <= 0 {
		return CPUShare{}, false
	}
	goCPU := 0.0
	for _, v := range m.parts {
		goCPU += v
	}
	f := func(part string) float64 { return m.parts[part] / m.busy }
	c := CPUShare{
		Functions: f(lambdalocal.FunctionLabel), Bare: f(partBare), HTTPAPI: f(localrun.PartHTTPAPI),
		Sender: f(partSender), Simulator: f(providersim.PartSimulator), EventSource: f(lambdalocal.PartEventSource), OtherGo: f(""),
		Outside: max(0, 1-goCPU/m.busy), Busy: m.busy / m.total,
	}
	if m.events > 0 {
		c.PerEventMS = 1000 * m.busy / float64(m.events)
	}
	return c, true
}

// cpuByPart sums a CPU profile's samples in seconds by the part of the
// system their goroutine was labelled with: a function's invocation
// (lambdalocal.FunctionLabel), the local HTTP API, the sender, the
// provider simulator, or "" for the rest.
func cpuByPart(p *profile.Profile) (map[string]float64, error) {
	idx := -1
	for i, st := range p.SampleType {
		if st.Type == "cpu" && st.Unit == "nanoseconds" {
			idx = i
		}
	}
	if idx < 0 {
		return nil, fmt.Errorf("lab: cpu profile has no cpu nanoseconds")
	}
	out := map[string]float64{}
	for _, s := range p.Sample {
		out[partOf(s.Label)] += float64(s.Value[idx]) / 1e9
	}
	return out, nil
}

func partOf(labels map[string][]string) string {
	if len(labels[lambdalocal.FunctionLabel]) > 0 {
		return lambdalocal.FunctionLabel
	}
	for _, v := range labels[localrun.PartLabel] {
		switch v {
		case localrun.PartHTTPAPI, lambdalocal.PartEventSource, partSender, partBare, providersim.PartSimulator:
			return v
		}
	}
	return ""
}

// machineCPU is the kernel's count of the machine's CPU seconds since it
// started: busy, and in all (busy, idle and waiting for I/O).
type machineCPU struct{ busy, total float64 }

// readMachineCPU reads the first line of /proc/stat (Linux): user, nice,
// system, idle, iowait, irq, softirq and steal, in clock ticks of 1/100 s.
func readMachineCPU() (machineCPU, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineCPU{}, fmt.Errorf("lab: machine cpu: %w", err)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	fields := strings.Fields(line)
	if len(fields) < 9 || fields[0] != "cpu" {
		return machineCPU{}, fmt.Errorf("lab: machine cpu: unexpected /proc/stat line %.60q", line)
	}
	var t [8]float64
	for i := range t {
		n, err := strconv.ParseUint(fields[i+1], 10, 64)
		if err != nil {
			return machineCPU{}, fmt.Errorf("lab: machine cpu: %w", err)
		}
		t[i] = float64(n) / 100
	}
	idle := t[3] + t[4]
	busy := t[0] + t[1] + t[2] + t[5] + t[6] + t[7]
	return machineCPU{busy: busy, total: busy + idle}, nil
}
