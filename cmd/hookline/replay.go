package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookline/hookline/internal/ops"
)

// newIntakeCmd holds the commands on the intake record.
func newIntakeCmd() *cobra.Command {
	cmd := group("intake", "Intake: replay recorded webhooks onto their queues")
	cmd.AddCommand(newIntakeReplayCmd())
	return cmd
}

// newIntakeReplayCmd re-enqueues intake records: the provider's "resend",
// through the same idempotent path.
func newIntakeReplayCmd() *cobra.Command {
	var source, sinceText, untilText string
	var events []string
	var dryRun bool
	var rate float64
	var limit int
	cmd := &cobra.Command{
		Use:   "replay --source NAME (--event ID... | --since T [--until T])",
		Short: "Re-enqueue intake records by event ID or by time received",
		Long: `Re-enqueue intake records by event ID or by time received, as the
provider's "resend" would; the workers' idempotency makes replaying applied
events harmless while their idempotency keys are kept. A record past its
intake expiry, or received longer ago than IDEMPOTENCY_RETENTION less a day,
is skipped and listed as "too old" with its reason, and the command exits 3
(partial), because replaying it would charge its event again. T is RFC 3339 (2026-11-30T03:00:00Z) or a duration ago (90m,
2h); --until defaults to now.`,
		Example: "  hookline intake replay --source payments --since 2h --dry-run\n  hookline intake replay --source payments --event evt_pay_1001",
		Args:    cobra.NoArgs,
	}
	f := cmd.Flags()
	f.StringVar(&source, "source", "", "webhook source, such as payments or usage (required)")
	f.StringSliceVar(&events, "event", nil, "event ID to replay (repeatable, or comma-separated)")
	f.StringVar(&sinceText, "since", "", "replay events received at or after T")
	f.StringVar(&untilText, "until", "", "with --since: replay events received at or before T (default now)")
	f.BoolVar(&dryRun, "dry-run", false, "print what would be sent and send nothing")
	f.Float64Var(&rate, "rate", 0, "at most N events per second (0: no limit)")
	f.IntVar(&limit, "max", 0, "replay at most N events (0: all)")
	asJSON := jsonFlag(cmd)
	require(cmd, "source")
	cmd.MarkFlagsOneRequired("event", "since")
	cmd.MarkFlagsMutuallyExclusive("event", "since")
	cmd.MarkFlagsMutuallyExclusive("event", "until")
	_ = cmd.RegisterFlagCompletionFunc("source", completeSources)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		now := time.Now()
		var ids []string
		for _, id := range events {
			if id = strings.TrimSpace(id); id != "" {
				ids = append(ids, id)
			}
		}
		if rate < 0 || limit < 0 {
			return usageErrorf("--rate and --max must not be negative")
		}
		opts := ops.ReplayOptions{Source: source, EventIDs: ids, DryRun: dryRun, Rate: rate, Max: limit}
		if sinceText != "" {
			var err error
			if opts.Since, err = parseWhen(sinceText, now); err != nil {
				return usageErrorf("bad --since: %v", err)
			}
			opts.Until = now
			if untilText != "" {
				if opts.Until, err = parseWhen(untilText, now); err != nil {
					return usageErrorf("bad --until: %v", err)
				}
			}
			if opts.Until.Before(opts.Since) {
				return usageErrorf("--until %s is before --since %s", opts.Until.Format(time.RFC3339), opts.Since.Format(time.RFC3339))
			}
		} else if len(ids) == 0 {
			return usageErrorf("--event names no event")
		}
		s, err := connectCmd(cmd)
		if err != nil {
			return err
		}
		p := newProgress("replay " + source)
		opts.Progress = p.callback()
		rep, err := s.ops.Replay(cmd.Context(), opts)
		p.done()
		if err != nil {
			code := fail("intake replay", err)
			if code == exitFailure {
				s.hint("intake replay")
			}
			return exit(code)
		}
		writeReplay(cmd.OutOrStdout(), rep, *asJSON)
		if rep.Partial() {
			return exit(exitPartial)
		}
		return nil
	}
	return cmd
}

// parseWhen reads RFC 3339 or a duration before now.
func parseWhen(v string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return time.Time{}, fmt.Errorf("%q is neither RFC 3339 nor a duration ago", v)
	}
	return now.Add(-d), nil
}

func writeReplay(out io.Writer, rep ops.ReplayReport, asJSON bool) {
	if asJSON {
		if rep.Items == nil {
			rep.Items = []ops.ReplayItem{}
		}
		writeJSON(out, rep)
		return
	}
	if len(rep.Items) > 0 {
		tw := newTable(out)
		fmt.Fprintln(tw, "OUTCOME\tEVENT\tRECEIVED\tINTAKE\tMESSAGE\tDETAIL")
		for _, it := range rep.Items {
			detail := it.Error
			if it.Reason != "" {
				detail = it.Reason + ": " + it.Error
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", it.Outcome, it.EventID, orDash(it.ReceivedAt), orDash(it.Status),
				orDash(it.MessageID), orDash(detail))
		}
		tw.Flush()
	}
	verb := "sent"
	if rep.DryRun {
		verb = "would send"
	}
	fmt.Fprintf(out, "%s: %s %d, missing %d, skipped %d (too old), failed %d in %s", rep.Source, verb, rep.Sent, rep.Missing,
		rep.Skipped, rep.Failed, rep.Elapsed.Round(time.Millisecond))
	if rep.DryRun {
		fmt.Fprint(out, " (dry run: nothing sent)")
	}
	if rep.Interrupted {
		fmt.Fprint(out, " (interrupted)")
	}
	fmt.Fprintln(out)
}
