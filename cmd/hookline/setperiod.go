package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookline/hookline/internal/period"
)

// newWorkloadSetPeriodCmd changes a workload's billing period at the end
// of its current period ([spend.Caps.SetPeriod]).
func newWorkloadSetPeriodCmd() *cobra.Command {
	var pc period.Config
	cmd := &cobra.Command{
		Use:   "set-period <workload> --period month --anchor WALLTIME [--time-zone ZONE]",
		Short: "Change a workload's billing period, from the end of its current period",
		Long: `Change a workload's billing period (its length, anchor and time zone) at the
end of its current period: that period keeps its bounds, total and cap, and
the first period after it runs to the new period's next boundary. The
change is recorded as a decision (workload explain shows it). A workload
created without a period (a lifetime total) has no boundary to change at.`,
		Example: "  hookline workload set-period workload-8 --period month --anchor 2027-01-01T00:00:00 --time-zone America/New_York",
		Args:    cobra.ExactArgs(1),
	}
	cmd.Flags().StringVar(&pc.Period, "period", "", "the new period: day, week, month or year (required)")
	cmd.Flags().StringVar(&pc.Anchor, "anchor", "", "the new period's anchor: a wall time in --time-zone (2027-01-01T00:00:00) or RFC 3339")
	cmd.Flags().StringVar(&pc.TimeZone, "time-zone", "", "IANA time zone of the new period's wall clock (default UTC)")
	asJSON := jsonFlag(cmd)
	require(cmd, "period")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		to, err := pc.Recurrence()
		if err != nil {
			return usageErrorf("%v", err)
		}
		s, err := connectCmd(cmd)
		if err != nil {
			return err
		}
		ctx, id := cmd.Context(), args[0]
		change, err := s.ledger.Caps.SetPeriod(ctx, id, to)
		if err != nil {
			return exit(fail("workload set-period", err))
		}
		w, err := s.ledger.Workloads.Get(ctx, id)
		if err != nil {
			return exit(fail("workload set-period", err))
		}
		cur, err := w.Period()
		if err != nil {
			return exit(fail("workload set-period", err))
		}
		cur = cur.In(w.Periods.Recurrence.Zone)
		out := cmd.OutOrStdout()
		if *asJSON {
			c := to.Config()
			return jsonResult(out, map[string]string{"action": "set-period", "workload": id, "period": c.Period,
				"anchor": c.Anchor, "time_zone": c.TimeZone, "from": change.From.Format(time.RFC3339),
				"current_period": cur.String(), "until_then": w.Periods.Recurrence.String()})
		}
		_, err = fmt.Fprintf(out, "set-period: workload %s changes to %s at %s, the end of its current period %s; until then %s\n",
			id, to, change.From.Format(time.RFC3339), cur, w.Periods.Recurrence)
		return err
	}
	return cmd
}
