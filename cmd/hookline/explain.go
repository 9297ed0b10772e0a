package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/hookline/hookline/pkg/ops"
	"github.com/hookline/hookline/pkg/spend"
)

const explainUsage = `usage:
  hookline explain <workload> [--json]
  hookline explain --event <event or usage record ID> [--json]`

// explainCmd prints the runbook on one screen for a workload or an event.
func explainCmd(ctx context.Context, args []string, out io.Writer) int {
	fs, asJSON, verbose := newFlags("explain")
	event := fs.String("event", "", "explain a webhook event ID or usage record ID")
	pos, err := parseInterleaved(fs, args)
	if err != nil || (*event == "") == (len(pos) != 1) || len(pos) > 1 {
		return usageError("explain", "give one workload or --event\n%s", explainUsage)
	}
	s, code := connectOrFail(ctx, "explain", *verbose)
	if s == nil {
		return code
	}
	now := time.Now()
	if *event != "" {
		x, err := s.ledger.ExplainEvent(ctx, *event)
		if errors.Is(err, spend.ErrNotFound) {
			fmt.Fprintf(stderr, "hookline explain: nothing in the ledger under %s (not an applied or deferred usage record or event)\n", *event)
			return exitFailure
		}
		if err != nil {
			s.hint("explain")
			return fail("explain", err)
		}
		r := ops.NewEventRunbook(*event, x, now)
		if *asJSON {
			writeJSON(out, r)
		} else {
			r.WriteText(out)
		}
		return exitOK
	}
	x, err := s.ledger.Explain(ctx, pos[0])
	if errors.Is(err, spend.ErrUnknownWorkload) {
		fmt.Fprintf(stderr, "hookline explain: no workload %q (hookline workload list)\n", pos[0])
		return exitFailure
	}
	if err != nil {
		s.hint("explain")
		return fail("explain", err)
	}
	r := ops.NewRunbook(x, now)
	if r.IntervalChanges, err = s.recon.IntervalChanges(ctx, pos[0], 10); err != nil {
		return fail("explain", err)
	}
	if *asJSON {
		writeJSON(out, r)
	} else {
		r.WriteText(out)
	}
	return exitOK
}
