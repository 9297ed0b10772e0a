package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hookline/hookline/internal/ops"
	"github.com/hookline/hookline/internal/spend"
	"github.com/hookline/hookline/pkg/webhook"
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
		r, err := ops.ExplainWorkload(cmd.Context(), s.explainSources(""), id, s.now())
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
		r, err := ops.ExplainEvent(cmd.Context(), s.explainSources(*source), id, s.now())
		if errors.Is(err, spend.ErrNotFound) {
			// Not usage: a payment event, say, whose record is its intake
			// record and whose effect is the worker's idempotency record.
			return explainIntake(cmd, s, id, *source, *asJSON)
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

// explainIntake explains an event the ledger does not know, by its intake
// record under the first of the other sources that holds it, and the
// effect check of the queue it was sent to.
func explainIntake(cmd *cobra.Command, s *opsConn, id, usageSource string, asJSON bool) error {
	sources := paymentSources()
	for _, src := range sources {
		v, found, err := s.ops.ExplainIntake(cmd.Context(), src, id)
		if err != nil {
			s.hint("event explain")
			return exit(fail("event explain", err))
		}
		if !found {
			continue
		}
		if asJSON {
			return jsonResult(cmd.OutOrStdout(), v)
		}
		fmt.Fprint(cmd.OutOrStdout(), v.Text())
		return nil
	}
	fmt.Fprintf(stderr, "hookline event explain: nothing under %s in the ledger, the %s intake or the intake of %s: "+
		"not received, or past its retention; a dead letter is listed by hookline dlq peek payments-dlq (or usage-dlq), "+
		"and hookline intake replay --source NAME --since T --until T sends what a source received\n",
		id, usageSource, strings.Join(sources, ", "))
	return exit(exitFailure)
}

// paymentSources are the sources whose intake event explain reads for an
// event the ledger does not know: those of HOOKLINE_SOURCES that feed the
// payments queue, else the template's payments source.
func paymentSources() []string {
	specs, err := webhook.ParseSources(os.Getenv("HOOKLINE_SOURCES"))
	var out []string
	for _, sp := range specs {
		if err == nil && sp.Queue == "payments" {
			out = append(out, sp.Name)
		}
	}
	if len(out) == 0 {
		out = []string{"payments"}
	}
	return out
}
