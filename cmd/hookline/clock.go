//go:build !oncall

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookline/hookline/internal/dev/localrun"
)

// controlURLVar names the local run's control endpoint in the endpoints
// file that `hookline run` writes.
const controlURLVar = "HOOKLINE_CONTROL_URL"

// newClockCmd shows the local run's clock; its subcommands move it.
func newClockCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "clock",
		Short: "Show or move the local run's clock (advance, set)",
		Long: `Show the clock of the local run ('hookline run' in this directory): the
time that every function, the provider simulator and the reconciler's
schedule read, and how far it is ahead of wall time. 'advance' and 'set'
move it forward, never back, so that a drill crosses a settle horizon or a
period's end in seconds. A move waits for the invocations in flight, and a
schedule whose next firing it passes fires at once. The local AWS keeps
wall time: SQS visibility and DynamoDB's TTL expiry do not move.
'dev send-webhook' and 'dev send-usage' sign with this clock.`,
		Example: "  hookline dev clock\n  hookline dev clock advance 720h\n  hookline dev clock set 2027-01-01T08:00:00Z",
		Args:    cobra.NoArgs,
	}
	asJSON := jsonFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return clockCall(cmd, http.MethodGet, nil, *asJSON)
	}
	cmd.AddCommand(newClockMoveCmd("advance DURATION", "Move the local run's clock forward by a duration (720h, 90m)",
		"  hookline dev clock advance 720h", func(arg string) (localrun.ClockMove, error) {
			if d, err := time.ParseDuration(arg); err != nil || d <= 0 {
				return localrun.ClockMove{}, usageErrorf("advance %q: want a positive duration such as 720h or 90m", arg)
			}
			return localrun.ClockMove{Advance: arg}, nil
		}),
		newClockMoveCmd("set TIME", "Move the local run's clock forward to an RFC 3339 time",
			"  hookline dev clock set 2027-01-01T08:00:00Z", func(arg string) (localrun.ClockMove, error) {
				if _, err := time.Parse(time.RFC3339, arg); err != nil {
					return localrun.ClockMove{}, usageErrorf("set %q: want an RFC 3339 time such as 2027-01-01T08:00:00Z", arg)
				}
				return localrun.ClockMove{Set: arg}, nil
			}))
	return cmd
}

// newClockMoveCmd is a subcommand of clock that moves it as parse makes
// of its one argument.
func newClockMoveCmd(use, short, example string, parse func(string) (localrun.ClockMove, error)) *cobra.Command {
	cmd := &cobra.Command{Use: use, Short: short, Example: example, Args: cobra.ExactArgs(1)}
	asJSON := jsonFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		move, err := parse(args[0])
		if err != nil {
			return err
		}
		body, _ := json.Marshal(move)
		return clockCall(cmd, http.MethodPost, body, *asJSON)
	}
	return cmd
}

// clockCall calls the run's clock and prints its reading: "clock
// 2027-01-01T08:00:00Z (720h0m0s ahead of wall time)". A move the run
// refuses is a usage error (exit 2), naming why.
func clockCall(cmd *cobra.Command, method string, body []byte, asJSON bool) error {
	name := cmd.CommandPath()
	base := controlURL()
	if base == "" {
		return usageErrorf("no local run found: start one with make run (or hookline run) in this directory")
	}
	status, answer, err := httpDo(cmd.Context(), method, strings.TrimSuffix(base, "/")+localrun.ClockPath, body)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return exit(exitFailure)
	}
	if status != http.StatusOK {
		var refusal struct{ Error string }
		if json.Unmarshal(answer, &refusal) != nil || refusal.Error == "" {
			refusal.Error = fmt.Sprintf("%d %s", status, answer)
		}
		fmt.Fprintf(stderr, "%s: %s\n", name, refusal.Error)
		if status == http.StatusBadRequest {
			return exit(exitUsage)
		}
		return exit(exitFailure)
	}
	var r localrun.ClockReading
	if err := json.Unmarshal(answer, &r); err != nil {
		fmt.Fprintf(stderr, "%s: the run answered %q: %v\n", name, answer, err)
		return exit(exitFailure)
	}
	if asJSON {
		return jsonResult(cmd.OutOrStdout(), r)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "clock %s (%s ahead of wall time)\n", r.Now.Format(time.RFC3339), r.Ahead)
	return nil
}

// controlURL is the local run's control endpoint, from the environment or
// the endpoints file; "" when there is no local run.
func controlURL() string {
	loadEndpoints()
	return os.Getenv(controlURLVar)
}

// localClock is the clock of the local run whose HTTP API is at base (""
// for the run of this directory): the run's clock when there is one, so
// that a signature's time falls inside the replay window of a run whose
// clock was moved; else wall time.
func localClock(ctx context.Context, base string) func() time.Time {
	control := controlURL()
	if control == "" || (base != "" && base != os.Getenv("HOOKLINE_API_URL")) {
		return time.Now
	}
	status, answer, err := httpDo(ctx, http.MethodGet, strings.TrimSuffix(control, "/")+localrun.ClockPath, nil)
	var r localrun.ClockReading
	if err != nil || status != http.StatusOK || json.Unmarshal(answer, &r) != nil {
		return time.Now
	}
	ahead, err := time.ParseDuration(r.Ahead)
	if err != nil || ahead <= 0 {
		return time.Now
	}
	return func() time.Time { return time.Now().Add(ahead) }
}

// opsClock is the clock the operator commands read (explain's "in 1s"
// and "overdue", the times of a resume's decision): the local run's
// clock when there is one, as its functions read it. The on-call build's
// is the real clock.
func opsClock(ctx context.Context) func() time.Time { return localClock(ctx, "") }
