package hostile

import (
	"strconv"
	"time"

	"github.com/hookline/hookline/internal/dev/providersim"
	"github.com/hookline/hookline/internal/testkit"
)

// Faults are the provider faults of the provider contract's drills, as
// the fault models draw them: commits that answer 5xx or 408, drop the
// connection or outlast the client's timeout, slow commits and keys in
// flight, declines with an error body, and failures before any commit.
var Faults = []providersim.Fault{
	{Kind: providersim.FaultCommitThenError, Status: 502},
	{Kind: providersim.FaultCommitThenError, Status: 504},
	{Kind: providersim.FaultCommitThenError, Status: 500},
	{Kind: providersim.FaultCommitThenError, Status: 408},
	{Kind: providersim.FaultDropAfterCharge},
	{Kind: providersim.FaultTimeoutAfterCharge, Delay: 2 * time.Second},
	{Kind: providersim.FaultSlowCommit},
	{Kind: providersim.FaultKeyInUse},
	{Kind: providersim.FaultDeclineErrorBody},
	{Kind: providersim.FaultServerError, Status: 503},
	{Kind: providersim.FaultRateLimit, RetryAfter: "0"},
	{Kind: providersim.FaultReset},
	{Kind: providersim.FaultTimeoutBeforeCharge, Delay: 2 * time.Second},
}

// FaultFunc returns the simulator's fault function of a model: the n-th
// charge request under a key meets one of faults with probability rate,
// drawn from d by the key and n alone. A slow commit or a key in flight
// commits up to maxCommit late.
func FaultFunc(d *testkit.Dice, rate float64, faults []providersim.Fault, maxCommit time.Duration) providersim.FaultFunc {
	return func(key string, n int) providersim.Fault {
		nth := strconv.Itoa(n)
		if len(faults) == 0 || d.Roll("provider", key, nth) >= rate {
			return providersim.Fault{}
		}
		f := faults[d.Hash("kind", key, nth)%uint64(len(faults))]
		if f.Kind == providersim.FaultSlowCommit || f.Kind == providersim.FaultKeyInUse {
			f.Delay = time.Duration(d.Roll("delay", key, nth) * float64(maxCommit))
		}
		return f
	}
}
