package localaws

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
)

// FaultsEnv names the variable that turns on the seeded fault layer
// ([Options.FaultsFromEnv]), e.g.
// "seed=7,ddb-ambiguous=0.005,sqs-duplicate=0.01".
const FaultsEnv = "HOOKLINE_LOCAL_AWS_FAULTS"

// Fault names, as [FaultsEnv] spells them.
const (
	// FaultDDBAmbiguous: a DynamoDB write commits, and the answer is a 500
	// or a dropped connection.
	FaultDDBAmbiguous = "ddb-ambiguous"
	// FaultDDBError: a DynamoDB write is answered 500 before it is applied.
	FaultDDBError = "ddb-error"
	// FaultDDBThrottle: a DynamoDB write is throttled before it is applied
	// (ProvisionedThroughputExceededException, 400).
	FaultDDBThrottle = "ddb-throttle"
	// FaultSQSSendAmbiguous: a SendMessage or SendMessageBatch is enqueued,
	// and the answer is a 500.
	FaultSQSSendAmbiguous = "sqs-send-ambiguous"
	// FaultSQSDuplicate: a received message is delivered again later,
	// whether or not it was deleted.
	FaultSQSDuplicate = "sqs-duplicate"
	// FaultSQSDeleteLost: a delete answers success without deleting, so the
	// message returns after its visibility timeout.
	FaultSQSDeleteLost = "sqs-delete-lost"
)

// FaultNames lists every fault the layer knows, in the order it reports
// them.
var FaultNames = []string{
	FaultDDBAmbiguous, FaultDDBError, FaultDDBThrottle,
	FaultSQSSendAmbiguous, FaultSQSDuplicate, FaultSQSDeleteLost,
}

// ErrBadFaults reports a [FaultsEnv] value that cannot be used; the error
// names the pair.
var ErrBadFaults = errors.New("localaws: bad " + FaultsEnv)

// Faults configures the seeded fault layer of the embedded emulators.
// The zero value injects nothing.
type Faults struct {
	// Seed makes the decisions: the same seed, request and attempt always
	// decide the same way.
	Seed uint64
	// Rates is the probability, in [0, 1], of each named fault
	// ([FaultNames]) on each request it applies to.
	Rates map[string]float64
	// Match, when set, limits faults to the requests it accepts (drills aim
	// one fault at one operation's first attempt). It is called
	// concurrently.
	Match func(FaultRequest) bool
}

// FaultRequest is what a fault decision is made about.
type FaultRequest struct {
	// Fault is the fault being decided ([FaultNames]).
	Fault string
	// Operation is the API action, e.g. "PutItem" or "SendMessage".
	Operation string
	// Table is the DynamoDB table a single-item request names.
	Table string
	// Queue is the SQS queue URL the request names.
	Queue string
	// Attempt is the SDK's attempt number (amz-sdk-request), 1 without one.
	Attempt int
}

// On reports whether f injects anything.
func (f Faults) On() bool {
	for _, r := range f.Rates {
		if r > 0 {
			return true
		}
	}
	return false
}

// String returns f as [FaultsEnv] spells it.
func (f Faults) String() string {
	parts := []string{"seed=" + strconv.FormatUint(f.Seed, 10)}
	for _, name := range FaultNames {
		if r, ok := f.Rates[name]; ok {
			parts = append(parts, name+"="+strconv.FormatFloat(r, 'g', -1, 64))
		}
	}
	return strings.Join(parts, ",")
}

// ParseFaults reads a [FaultsEnv] value: comma-separated name=rate pairs
// and seed=N. An empty value injects nothing. Every bad pair is reported,
// each wrapped in [ErrBadFaults].
func ParseFaults(s string) (Faults, error) {
	f := Faults{Rates: map[string]float64{}}
	if strings.TrimSpace(s) == "" {
		return f, nil
	}
	var errs []error
	seen := map[string]bool{}
	for _, pair := range strings.Split(s, ",") {
		name, val, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if err := checkPair(pair, name, ok, seen); err != nil {
			errs = append(errs, err)
			continue
		}
		seen[name] = true
		if name == "seed" {
			seed, err := strconv.ParseUint(val, 10, 64)
			if err != nil {
				errs = append(errs, fmt.Errorf("%w: %q: seed is not a non-negative integer", ErrBadFaults, pair))
			}
			f.Seed = seed
			continue
		}
		rate, err := strconv.ParseFloat(val, 64)
		if err != nil || math.IsNaN(rate) || rate < 0 || rate > 1 {
			errs = append(errs, fmt.Errorf("%w: %q: rate is not a number from 0 to 1", ErrBadFaults, pair))
			continue
		}
		f.Rates[name] = rate
	}
	if len(errs) > 0 {
		return Faults{}, errors.Join(errs...)
	}
	return f, nil
}

// checkPair refuses a pair that is not name=value, names an unknown fault
// or repeats one.
func checkPair(pair, name string, ok bool, seen map[string]bool) error {
	switch {
	case !ok:
		return fmt.Errorf("%w: %q is not name=value", ErrBadFaults, pair)
	case name != "seed" && !knownFault(name):
		return fmt.Errorf("%w: %q: unknown fault %q (known: seed, %s)", ErrBadFaults, pair, name, strings.Join(FaultNames, ", "))
	case seen[name]:
		return fmt.Errorf("%w: %q: %s is given twice", ErrBadFaults, pair, name)
	}
	return nil
}

func knownFault(name string) bool {
	for _, n := range FaultNames {
		if n == name {
			return true
		}
	}
	return false
}

// FaultsFromEnv reads [FaultsEnv]; unset or empty injects nothing.
func FaultsFromEnv() (Faults, error) {
	return ParseFaults(os.Getenv(FaultsEnv))
}

// FaultCounts is how many faults of each name were injected.
type FaultCounts map[string]int64

// String lists the counts in [FaultNames] order, e.g.
// "ddb-ambiguous=3 sqs-duplicate=1".
func (c FaultCounts) String() string {
	names := make([]string, 0, len(c))
	for name := range c {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool { return faultIndex(names[i]) < faultIndex(names[j]) })
	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = name + "=" + strconv.FormatInt(c[name], 10)
	}
	return strings.Join(parts, " ")
}

func faultIndex(name string) int {
	for i, n := range FaultNames {
		if n == name {
			return i
		}
	}
	return len(FaultNames)
}

// faultLayer decides and counts faults. A nil *faultLayer injects
// nothing.
type faultLayer struct {
	cfg    Faults
	counts map[string]*atomic.Int64
}

// newFaultLayer returns the layer for f, or nil when f injects nothing.
func newFaultLayer(f Faults) *faultLayer {
	if !f.On() {
		return nil
	}
	l := &faultLayer{cfg: f, counts: map[string]*atomic.Int64{}}
	for name, r := range f.Rates {
		if r > 0 {
			l.counts[name] = new(atomic.Int64)
		}
	}
	return l
}

// fire decides whether fault hits req, whose identity (a body digest, an
// item key or a receipt handle) is id, and counts it if so.
func (l *faultLayer) fire(fault string, req FaultRequest, id string) bool {
	if l == nil {
		return false
	}
	rate := l.cfg.Rates[fault]
	if rate <= 0 {
		return false
	}
	req.Fault = fault
	if l.cfg.Match != nil && !l.cfg.Match(req) {
		return false
	}
	if l.draw(fault, req.Operation, id, req.Attempt) >= rate {
		return false
	}
	l.counts[fault].Add(1)
	return true
}

// draw maps (seed, fault, operation, identity, attempt) to a uniform
// number in [0, 1). The attempt is part of it, so an SDK retry of a
// request meets a fault independently of its first attempt.
func (l *faultLayer) draw(fault, op, id string, attempt int) float64 {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], l.cfg.Seed)
	h.Write(b[:])
	for _, s := range []string{fault, op, id} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	binary.LittleEndian.PutUint64(b[:], uint64(attempt))
	h.Write(b[:])
	return float64(mix64(h.Sum64())>>11) / (1 << 53)
}

// mix64 is SplitMix64's finaliser, which spreads FNV's bits evenly.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// snapshot returns the counts so far.
func (l *faultLayer) snapshot() FaultCounts {
	out := FaultCounts{}
	if l == nil {
		return out
	}
	for name, n := range l.counts {
		out[name] = n.Load()
	}
	return out
}

// attemptOf reads the SDK's attempt number from its amz-sdk-request
// header ("attempt=2; max=3"); a request without one is attempt 1.
func attemptOf(h http.Header) int {
	for _, part := range strings.Split(h.Get("amz-sdk-request"), ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if ok && k == "attempt" {
			if n, err := strconv.Atoi(v); err == nil && n > 0 {
				return n
			}
		}
	}
	return 1
}
