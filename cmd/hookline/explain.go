package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookline/hookline/pkg/ops"
	"github.com/hookline/hookline/pkg/spend"
)

// newWorkloadExplainCmd prints the runbook on one screen for a workload.
func newWorkloadExplainCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "explain <workload>",
		Short:   "The runbook on one screen: cause, total and cap, last event, reconciliation",
		Example: "  hookline workload explain workload-7",
		Args:    cobra.ExactArgs(1),
	}
	asJSON := jsonFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		s, err := connectCmd(cmd)
		if err != nil {
			return err
		}
		ctx, id, out := cmd.Context(), args[0], cmd.OutOrStdout()
		x, err := s.ledger.Explainer.Explain(ctx, id)
		if errors.Is(err, spend.ErrUnknownWorkload) {
			fmt.Fprintf(stderr, "hookline workload explain: no workload %q (hookline workload list)\n", id)
			return exit(exitFailure)
		}
		if err != nil {
			s.hint("workload explain")
			return exit(fail("workload explain", err))
		}
		r := ops.NewRunbook(x, time.Now())
		if r.IntervalChanges, err = s.recon.IntervalChanges(ctx, id, 10); err != nil {
			return exit(fail("workload explain", err))
		}
		if *asJSON {
			return jsonResult(out, r)
		}
		r.WriteText(out)
		return nil
	}
	return cmd
}

// newEventCmd holds the commands about one event.
func newEventCmd() *cobra.Command {
	cmd := group("event", "Events: explain a webhook event or usage record")
	cmd.AddCommand(newEventExplainCmd())
	return cmd
}

// newEventExplainCmd prints the runbook for a webhook event ID or usage
// record ID, such as the one a page names.
func newEventExplainCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "explain <event or usage record ID>",
		Short:   "What an event did: its workload, the ledger entry and the reconciliation",
		Example: "  hookline event explain evt_usage_ur_3",
		Args:    cobra.ExactArgs(1),
	}
	asJSON := jsonFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		s, err := connectCmd(cmd)
		if err != nil {
			return err
		}
		id, out := args[0], cmd.OutOrStdout()
		x, err := s.ledger.Explainer.ExplainEvent(cmd.Context(), id)
		if errors.Is(err, spend.ErrNotFound) {
			fmt.Fprintf(stderr, "hookline event explain: nothing in the ledger under %s (not an applied, deferred or quarantined usage record or event)\n", id)
			return exit(exitFailure)
		}
		if err != nil {
			s.hint("event explain")
			return exit(fail("event explain", err))
		}
		r := ops.NewEventRunbook(id, x, time.Now())
		switch {
		case *asJSON && x.Quarantined != nil:
			return jsonResult(out, struct {
				ops.EventRunbook
				Quarantined *spend.QuarantineRecord
			}{r, x.Quarantined})
		case *asJSON:
			return jsonResult(out, r)
		case x.Quarantined != nil && x.Entry == nil && x.Deferred == nil:
			writeQuarantine(out, x.Quarantined)
		default:
			r.WriteText(out)
			if x.Quarantined != nil {
				writeQuarantine(out, x.Quarantined)
			}
		}
		return nil
	}
	return cmd
}

// writeQuarantine prints a record the ledger refused: what it said, why it
// was refused, and who was paged.
func writeQuarantine(out io.Writer, q *spend.QuarantineRecord) {
	event := q.EventID
	if event == "" {
		event = "-"
	}
	fmt.Fprintf(out, "event %s: record %s, %d units for ref %s via %s QUARANTINED at %s: the ledger refused it, no total changed\n",
		event, q.RecordID, q.Units, q.WorkloadRef, q.Path, q.QuarantinedAt.UTC().Format(time.RFC3339))
	fmt.Fprintf(out, "reason\t%s\n", q.Reason)
	fmt.Fprintf(out, "paged\t%s (reconciliation owner %s), once; a corrected record needs a new record ID\n", q.DedupKey, q.Owner)
}
