package lab

import (
	"context"
	"crypto/sha256"
	"math"
	"net/http"
	"runtime/pprof"
	"testing"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/hookline/hookline/internal/dev/lambdalocal"
)

// spin burns CPU: n rounds of hashing.
func spin(n int) {
	b := make([]byte, 4096)
	for range n {
		s := sha256.Sum256(b)
		b[0] = s[0]
	}
}

func TestCPUMeterSplitsTheProcessByLabel(t *testing.T) {
	// Given one goroutine that works three times as long as the sender
	// as it works as a function, and as long again with no label
	var m cpuMeter
	if m.begin(); m.failed != nil {
		t.Skip("cpu profiling unavailable:", m.failed)
	}
	const unit = 100000
	asSender(context.Background(), func(context.Context) { spin(3 * unit) })
	pprof.Do(context.Background(), pprof.Labels(lambdalocal.FunctionLabel, "ReceiverFunction"), func(context.Context) { spin(unit) })
	spin(unit)
	if m.end(10); m.failed != nil {
		t.Fatal(m.failed)
	}
	// Then its profile puts the time where each label says
	sender, fn, rest := m.parts[partSender], m.parts[lambdalocal.FunctionLabel], m.parts[""]
	t.Logf("sender %.2fs, function %.2fs, unlabelled %.2fs, machine busy %.2fs of %.2fs", sender, fn, rest, m.busy, m.total)
	if fn < 0.1 || sender/fn < 2.2 || sender/fn > 4 || rest/fn < 0.6 || rest/fn > 1.7 {
		t.Fatalf("sender %.2fs, function %.2fs, unlabelled %.2fs: want about 3:1:1", sender, fn, rest)
	}
	c, ok := m.share()
	if !ok || c.Busy <= 0 || c.Busy > 1 || c.Sender+c.Functions+c.OtherGo+c.Outside < 0.99 || c.Harness() != c.Sender ||
		math.Abs(c.PerEventMS-100*m.busy) > 1e-6 {
		t.Fatalf("shares %+v (ok %v)", c, ok)
	}
}

func TestCPUMeterStandsAsideForAProfileOfTheRun(t *testing.T) {
	// Given a CPU profile of the whole run being taken (--cpuprofile)
	var whole cpuMeter
	if err := whole.start(); err != nil {
		t.Skip("cpu profiling unavailable:", err)
	}
	defer whole.stop()
	// Then the ceilings' meter does not start, and reports nothing
	var m cpuMeter
	m.begin()
	m.end(100)
	if _, ok := m.share(); ok || m.failed == nil {
		t.Fatalf("measured %+v under another profile", m)
	}
}

func TestBareConnectionsKeepTheClientsSettings(t *testing.T) {
	// Given the local SQS client, whose transport keeps 128 idle
	// connections a host (the SDK's default keeps 10)
	base := sqs.New(sqs.Options{Region: "us-east-1", HTTPClient: awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		tr.MaxIdleConnsPerHost = 128
	})})
	// Then the bare pipeline's client has connections of its own with the
	// same settings: fewer idle connections would make it reconnect, and
	// slow it where the functions' client does not
	own, ok := ownConnections(base).Options().HTTPClient.(*awshttp.BuildableClient)
	if !ok || own == base.Options().HTTPClient || own.GetTransport().MaxIdleConnsPerHost != 128 {
		t.Fatalf("bare client %T %p (base %p), idle connections a host %d", own, own, base.Options().HTTPClient, own.GetTransport().MaxIdleConnsPerHost)
	}
}

// TestCPUDeltaIsNeverOverAllTheCores: between two readings of /proc/stat
// the iowait count may fall (proc(5)); a machine that was busy all along
// is then 100% busy, not more.
func TestCPUDeltaIsNeverOverAllTheCores(t *testing.T) {
	before := machineCPU{busy: 100, total: 100 + 30} // idle 20, iowait 10
	after := machineCPU{busy: 104, total: 104 + 28}  // idle 20, iowait 8
	busy, total := cpuDelta(before, after)
	if busy != 4 || total != 4 {
		t.Fatalf("busy %.0f of %.0f ticks, want 4 of 4", busy, total)
	}
}
