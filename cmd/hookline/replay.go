package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hookline/hookline/pkg/ops"
)

const replayUsage = `usage:
  hookline replay --source payments --event evt_1 [--event evt_2 ...] [--dry-run] [--json]
  hookline replay --source payments --since T [--until T] [--dry-run] [--rate N] [--max N] [--json]
T is RFC 3339 (2026-11-30T03:00:00Z) or a duration ago (90m, 2h); --until defaults to now.`

// replayCmd re-enqueues intake records: the provider's "resend", through
// the same idempotent path.
func replayCmd(ctx context.Context, args []string, out io.Writer) int {
	fs, asJSON, verbose := newFlags("replay")
	source := fs.String("source", "", "webhook source (payments, usage)")
	var events []string
	fs.Func("event", "event ID to replay (repeatable, or comma-separated)", func(v string) error {
		for _, id := range strings.Split(v, ",") {
			if id = strings.TrimSpace(id); id != "" {
				events = append(events, id)
			}
		}
		return nil
	})
	sinceText := fs.String("since", "", "replay events received at or after T")
	untilText := fs.String("until", "", "replay events received at or before T (default now)")
	dryRun := fs.Bool("dry-run", false, "print what would be sent and send nothing")
	rate := fs.Float64("rate", 0, "at most N events per second (0: no limit)")
	limit := fs.Int("max", 0, "replay at most N events (0: all)")
	pos, err := parseInterleaved(fs, args)
	if err != nil || len(pos) != 0 || *source == "" {
		return usageError("replay", "--source and either --event or --since are required\n%s", replayUsage)
	}
	now := time.Now()
	opts := ops.ReplayOptions{Source: *source, EventIDs: events, DryRun: *dryRun, Rate: *rate, Max: *limit}
	if *sinceText != "" || *untilText != "" {
		if opts.Since, err = parseWhen(*sinceText, now); err != nil || *sinceText == "" {
			return usageError("replay", "bad --since %q\n%s", *sinceText, replayUsage)
		}
		opts.Until = now
		if *untilText != "" {
			if opts.Until, err = parseWhen(*untilText, now); err != nil {
				return usageError("replay", "bad --until %q\n%s", *untilText, replayUsage)
			}
		}
	}
	s, code := connectOrFail(ctx, "replay", *verbose)
	if s == nil {
		return code
	}
	p := newProgress("replay " + *source)
	opts.Progress = p.callback()
	rep, err := s.ops.Replay(ctx, opts)
	p.done()
	if err != nil {
		code := fail("replay", err)
		if code == exitFailure {
			s.hint("replay")
		}
		return code
	}
	writeReplay(out, rep, *asJSON)
	if rep.Partial() {
		return exitPartial
	}
	return exitOK
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
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", it.Outcome, it.EventID, orDash(it.ReceivedAt), orDash(it.Status),
				orDash(it.MessageID), orDash(it.Error))
		}
		tw.Flush()
	}
	verb := "sent"
	if rep.DryRun {
		verb = "would send"
	}
	fmt.Fprintf(out, "%s: %s %d, missing %d, failed %d in %s", rep.Source, verb, rep.Sent, rep.Missing, rep.Failed,
		rep.Elapsed.Round(time.Millisecond))
	if rep.DryRun {
		fmt.Fprint(out, " (dry run: nothing sent)")
	}
	if rep.Interrupted {
		fmt.Fprint(out, " (interrupted)")
	}
	fmt.Fprintln(out)
}
