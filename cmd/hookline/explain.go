package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookline/hookline/internal/ops"
	"github.com/hookline/hookline/internal/spend"
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
		id, out := args[0], cmd.OutOrStdout()
		r, err := ops.ExplainWorkload(cmd.Context(), s.explainSources(""), id, time.Now())
		if errors.Is(err, spend.ErrUnknownWorkload) {
			fmt.Fprintf(stderr, "hookline workload explain: no workload %q (hookline workload list)\n", id)
			return exit(exitFailure)
		}
		if err != nil {
			s.hint("workload explain")
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
	source := cmd.Flags().String("source", "usage", "the usage source whose intake record of the event is read")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		s, err := connectCmd(cmd)
		if err != nil {
			return err
		}
		id, out := args[0], cmd.OutOrStdout()
		r, err := ops.ExplainEvent(cmd.Context(), s.explainSources(*source), id, time.Now())
		if errors.Is(err, spend.ErrNotFound) {
			fmt.Fprintf(stderr, "hookline event explain: nothing in the ledger or the %s intake under %s (not an applied, deferred or quarantined usage record or event)\n", *source, id)
			return exit(exitFailure)
		}
		if err != nil {
			s.hint("event explain")
			return exit(fail("event explain", err))
		}
		if *asJSON {
			return jsonResult(out, r)
		}
		return r.WriteText(out)
	}
	return cmd
}
