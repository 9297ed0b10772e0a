package lab

import (
	"runtime/metrics"
)

// Runtime is what the Go runtime of the lab's process did during the
// paced run, as of the last collection in it (the runtime brings its CPU
// figures up to date at each collection, every second or two under load). Everything local runs in that one process, the in-process
// DynamoDB with its stored items included, so its garbage collector
// competes with the functions for the same cores.
type Runtime struct {
	// GCShare is the garbage collector's CPU over all the CPU the
	// process used.
	GCShare float64 `json:"gc_share"`
	// GCCycles is how many collections ran.
	GCCycles int `json:"gc_cycles"`
	// LiveHeapMB is the heap the last collection found live.
	LiveHeapMB float64 `json:"live_heap_mb"`
}

var runtimeMetrics = []string{
	"/cpu/classes/gc/total:cpu-seconds",
	"/cpu/classes/total:cpu-seconds",
	"/cpu/classes/idle:cpu-seconds",
	"/gc/cycles/total:gc-cycles",
	"/gc/heap/live:bytes",
}

// runtimeSample is one reading of runtimeMetrics.
type runtimeSample struct {
	gc, total, idle float64
	cycles, live    uint64
}

// readRuntime reads the runtime's figures as of its last collection.
func readRuntime() runtimeSample {
	s := make([]metrics.Sample, len(runtimeMetrics))
	for i, name := range runtimeMetrics {
		s[i].Name = name
	}
	metrics.Read(s)
	return runtimeSample{gc: float(s[0]), total: float(s[1]), idle: float(s[2]), cycles: count(s[3]), live: count(s[4])}
}

func float(s metrics.Sample) float64 {
	if s.Value.Kind() != metrics.KindFloat64 {
		return 0
	}
	return s.Value.Float64()
}

func count(s metrics.Sample) uint64 {
	if s.Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s.Value.Uint64()
}

// since is what the runtime did between before and a.
func (a runtimeSample) since(before runtimeSample) Runtime {
	r := Runtime{GCCycles: int(a.cycles - before.cycles), LiveHeapMB: float64(a.live) / (1 << 20)}
	if busy := (a.total - before.total) - (a.idle - before.idle); busy > 0 {
		r.GCShare = (a.gc - before.gc) / busy
	}
	return r
}
