package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookline/hookline/internal/ops"
	"github.com/hookline/hookline/internal/period"
	"github.com/hookline/hookline/internal/spend"
)

// newWorkloadCmd administers workloads: registration, caps, aliases,
// retirement, the operator's resume after a pause, and explanations.
func newWorkloadCmd() *cobra.Command {
	cmd := group("workload", "Workloads: create, list, check, explain, set-cap, set-step, set-hold, set-period, add-alias, retire, resume, admission")
	cmd.AddCommand(newWorkloadCreateCmd(), newWorkloadListCmd(), newWorkloadCheckCmd(), newWorkloadExplainCmd(),
		newWorkloadSetCapCmd(), newWorkloadSetStepCmd(), newWorkloadSetHoldCmd(), newWorkloadSetPeriodCmd(),
		newWorkloadAddAliasCmd(), newWorkloadRetireCmd(), newWorkloadResumeCmd(), newWorkloadAdmissionCmd())
	return cmd
}

func newWorkloadCreateCmd() *cobra.Command {
	var owner, routingKey, earlierRoute string
	var capUnits, step int64
	var hold bool
	var pc period.Config
	var grace, atBoundary string
	cmd := &cobra.Command{
		Use:   "create <workload> --owner OWNER --routing-key ROUTING_KEY --cap N [--step N] [--hold] [--period month --anchor WALLTIME --time-zone ZONE [--grace 1h] [--at-boundary resume|stay]]",
		Short: "Register a workload with its owner, PagerDuty routing key and cap (per period, or lifetime)",
		Example: "  hookline workload create workload-7 --owner images-team --routing-key rk-images --cap 1000\n" +
			"  hookline workload create workload-8 --owner images-team --routing-key rk-images --cap 1000 \\\n" +
			"    --period month --anchor 2026-01-31T00:00:00 --time-zone America/Los_Angeles --grace 1h --at-boundary resume",
		Args: cobra.ExactArgs(1),
	}
	cmd.Flags().StringVar(&owner, "owner", "", "owner paged on a cap trip (required)")
	cmd.Flags().StringVar(&routingKey, "routing-key", "", "the owner's PagerDuty routing key; never printed (required)")
	cmd.Flags().Int64Var(&capUnits, "cap", 0, "cap in spend units, positive (required)")
	cmd.Flags().Int64Var(&step, "step", 0, "escalation step: one more page per step over the cap; 0 turns it off")
	cmd.Flags().BoolVar(&hold, "hold", false, "hold, rather than page, unresolved amounts past their deadline")
	cmd.Flags().StringVar(&pc.Period, "period", "", "billing period the cap applies to: none (lifetime), day, week, month or year")
	cmd.Flags().StringVar(&pc.Anchor, "anchor", "", "the period's anchor: a wall time in --time-zone (2026-01-31T00:00:00) or RFC 3339")
	cmd.Flags().StringVar(&pc.TimeZone, "time-zone", "", "IANA time zone of the period's wall clock (default UTC)")
	cmd.Flags().StringVar(&grace, "grace", "", "time from a period's end to its close, the invoice finalisation delay (1h)")
	cmd.Flags().StringVar(&atBoundary, "at-boundary", "", "a workload paused by its cap, at the next period: resume (default) or stay paused")
	asJSON := jsonFlag(cmd)
	earlierRoutingKeyFlag(cmd, &earlierRoute)
	require(cmd, "owner", "cap")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if capUnits <= 0 || step < 0 {
			return usageErrorf("--cap must be positive and --step not negative")
		}
		periods, err := spend.ParsePeriods(pc, grace, atBoundary)
		if err != nil {
			return usageErrorf("%v", err)
		}
		if err := spend.ValidWorkloadID(args[0]); err != nil {
			return usageErrorf("%v (pattern %s)", err, spend.WorkloadIDPattern)
		}
		routingKeyNotice(cmd)
		s, err := connectCmd(cmd)
		if err != nil {
			return err
		}
		w, err := s.ledger.Workloads.CreateWorkload(cmd.Context(), spend.NewWorkload{ID: args[0], Owner: owner,
			RoutingKey: cmp.Or(routingKey, earlierRoute), Cap: capUnits, Step: step, Hold: hold, Periods: periods})
		if err != nil {
			return exit(fail("workload create", err))
		}
		return exit(printChange(cmd.OutOrStdout(), "created", nil, w, *asJSON))
	}
	return cmd
}

// earlierRoutingKeyFlag keeps --route, the name earlier builds gave
// --routing-key, for the scripts that use it: hidden, never with
// --routing-key, and one of the two is required. It goes once scripts have
// had a retention window (35 days) after the release that renamed it to
// move; routingKeyNotice tells them until then.
func earlierRoutingKeyFlag(cmd *cobra.Command, route *string) {
	cmd.Flags().StringVar(route, "route", "", "the earlier name of --routing-key")
	_ = cmd.Flags().MarkHidden("route")
	cmd.MarkFlagsOneRequired("routing-key", "route")
	cmd.MarkFlagsMutuallyExclusive("routing-key", "route")
}

// routingKeyNotice tells, on stderr, a command line that named --route to
// name --routing-key.
func routingKeyNotice(cmd *cobra.Command) {
	if cmd.Flags().Changed("route") {
		fmt.Fprintf(stderr, "%s: --route is deprecated: use --routing-key\n", cmd.CommandPath())
	}
}

func newWorkloadListCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List every workload with its status, total and cap",
		Args:  cobra.NoArgs,
	}
	asJSON := jsonFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ws, err := listWorkloads(cmd, "workload list")
		if err != nil {
			return err
		}
		views := make([]ops.WorkloadView, 0, len(ws))
		for _, w := range ws {
			views = append(views, ops.ViewWorkload(w))
		}
		out := cmd.OutOrStdout()
		if *asJSON {
			return jsonResult(out, views)
		}
		tw := newTable(out)
		fmt.Fprintln(tw, "WORKLOAD\tSTATUS\tOWNER\tTOTAL\tCAP\tSTEP\tHOLD\tNEXT RECON")
		for _, w := range views {
			next := "-"
			if !w.NextReconAt.IsZero() {
				next = w.NextReconAt.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%t\t%s\n", w.ID, w.Status, w.Owner, w.Total, w.Cap, w.Step, w.Hold, next)
		}
		tw.Flush()
		return nil
	}
	return cmd
}

// listWorkloads connects and reads every workload for the command named
// name, printing a failure.
func listWorkloads(cmd *cobra.Command, name string) ([]spend.Workload, error) {
	s, err := connectCmd(cmd)
	if err != nil {
		return nil, err
	}
	ws, err := s.ledger.Workloads.List(cmd.Context())
	if err != nil {
		s.hint(name)
		return nil, exit(fail(name, err))
	}
	return ws, nil
}

// idProblem is a registered workload whose ID is outside the alphabet.
type idProblem struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// newWorkloadCheckCmd reports workloads whose IDs fall outside the ID
// alphabet (created before it existed): they keep working, but cannot be
// reached through every route. It exits 1 when there is any.
func newWorkloadCheckCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Report workloads whose IDs fall outside the workload ID alphabet (exit 1 if any)",
		Args:  cobra.NoArgs,
	}
	asJSON := jsonFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ws, err := listWorkloads(cmd, "workload check")
		if err != nil {
			return err
		}
		bad := []idProblem{}
		for _, w := range ws {
			var invalid *spend.InvalidIDError
			if errors.As(spend.ValidWorkloadID(w.ID), &invalid) {
				bad = append(bad, idProblem{ID: w.ID, Reason: invalid.Reason})
			}
		}
		code := exitOK
		if len(bad) > 0 {
			code = exitFailure
		}
		out := cmd.OutOrStdout()
		if *asJSON {
			if err := writeJSON(out, map[string]any{"pattern": spend.WorkloadIDPattern, "workloads": len(ws), "invalid": bad}); err != nil {
				return exit(exitFailure)
			}
			return exit(code)
		}
		if len(bad) == 0 {
			fmt.Fprintf(out, "check: all %d workload IDs match %s\n", len(ws), spend.WorkloadIDPattern)
			return nil
		}
		fmt.Fprintf(out, "check: %d of %d workload IDs fall outside %s; they keep working, but a new workload cannot take such an ID:\n",
			len(bad), len(ws), spend.WorkloadIDPattern)
		for _, b := range bad {
			fmt.Fprintf(out, "  %q: %s\n", b.ID, b.Reason)
		}
		return exit(code)
	}
	return cmd
}

// change is one state-changing workload command: it reads the workload,
// applies the change and prints the fields that changed.
func workloadChange(use, short, example string, setup func(cmd *cobra.Command) (validate func() error, apply func(ctx context.Context, l *spend.Spend, id string) error)) *cobra.Command {
	cmd := &cobra.Command{Use: use, Short: short, Example: example, Args: cobra.ExactArgs(1)}
	validate, apply := setup(cmd)
	asJSON := jsonFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if validate != nil {
			if err := validate(); err != nil {
				return err
			}
		}
		name := cmd.Parent().Name() + " " + cmd.Name()
		s, err := connectCmd(cmd)
		if err != nil {
			return err
		}
		ctx, id := cmd.Context(), args[0]
		before, err := s.ledger.Workloads.Get(ctx, id)
		if err != nil {
			return exit(fail(name, err))
		}
		if err := apply(ctx, s.ledger, id); err != nil {
			return exit(fail(name, err))
		}
		after, err := s.ledger.Workloads.Get(ctx, id)
		if err != nil {
			return exit(fail(name, err))
		}
		return exit(printChange(cmd.OutOrStdout(), cmd.Name(), &before, after, *asJSON))
	}
	return cmd
}

func newWorkloadSetCapCmd() *cobra.Command {
	return workloadChange("set-cap <workload> --cap N", "Change a workload's cap", "  hookline workload set-cap workload-7 --cap 1500",
		func(cmd *cobra.Command) (func() error, func(context.Context, *spend.Spend, string) error) {
			capUnits := cmd.Flags().Int64("cap", 0, "new cap in spend units, positive (required)")
			require(cmd, "cap")
			return func() error {
					if *capUnits <= 0 {
						return usageErrorf("--cap must be positive, got %d", *capUnits)
					}
					return nil
				}, func(ctx context.Context, l *spend.Spend, id string) error {
					return l.Caps.SetCap(ctx, id, *capUnits)
				}
		})
}

func newWorkloadSetStepCmd() *cobra.Command {
	return workloadChange("set-step <workload> --step N", "Change a workload's escalation step (0 turns escalation off)", "  hookline workload set-step workload-7 --step 250",
		func(cmd *cobra.Command) (func() error, func(context.Context, *spend.Spend, string) error) {
			step := cmd.Flags().Int64("step", 0, "escalation step in spend units; 0 turns escalation off (required)")
			require(cmd, "step")
			return func() error {
					if *step < 0 {
						return usageErrorf("--step must not be negative, got %d", *step)
					}
					return nil
				}, func(ctx context.Context, l *spend.Spend, id string) error {
					return l.Caps.SetStep(ctx, id, *step)
				}
		})
}

func newWorkloadSetHoldCmd() *cobra.Command {
	return workloadChange("set-hold <workload> --hold true|false", "Hold, or page, a workload's unresolved amounts past their deadline", "  hookline workload set-hold workload-7 --hold true",
		func(cmd *cobra.Command) (func() error, func(context.Context, *spend.Spend, string) error) {
			holdText := cmd.Flags().String("hold", "", "true to hold, false to page (required; no default)")
			require(cmd, "hold")
			var hold bool
			return func() error {
					var err error
					if hold, err = strconv.ParseBool(*holdText); err != nil || (*holdText != "true" && *holdText != "false") {
						return usageErrorf("--hold must be true or false, got %q", *holdText)
					}
					return nil
				}, func(ctx context.Context, l *spend.Spend, id string) error {
					return l.Workloads.SetHold(ctx, id, hold)
				}
		})
}

func newWorkloadAddAliasCmd() *cobra.Command {
	var ref string
	cmd := &cobra.Command{
		Use:     "add-alias <workload> --ref PROVIDER_REF",
		Short:   "Attribute the provider's workload reference to a workload",
		Example: "  hookline workload add-alias workload-7 --ref img-resize",
		Args:    cobra.ExactArgs(1),
	}
	cmd.Flags().StringVar(&ref, "ref", "", "the provider's workload reference (required)")
	asJSON := jsonFlag(cmd)
	require(cmd, "ref")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if ref == "" {
			return usageErrorf("--ref must not be empty")
		}
		s, err := connectCmd(cmd)
		if err != nil {
			return err
		}
		if err := s.ledger.Workloads.AddAlias(cmd.Context(), ref, args[0]); err != nil {
			return exit(fail("workload add-alias", err))
		}
		out := cmd.OutOrStdout()
		if *asJSON {
			return jsonResult(out, map[string]any{"action": "add-alias", "workload": args[0], "ref": ref})
		}
		fmt.Fprintf(out, "add-alias: usage for %s is now attributed to workload %s\n", ref, args[0])
		return nil
	}
	return cmd
}

func newWorkloadRetireCmd() *cobra.Command {
	return workloadChange("retire <workload>", "Retire a workload: its usage is deferred, not attributed", "  hookline workload retire workload-7",
		func(*cobra.Command) (func() error, func(context.Context, *spend.Spend, string) error) {
			return nil, func(ctx context.Context, l *spend.Spend, id string) error { return l.Workloads.Retire(ctx, id) }
		})
}

func newWorkloadResumeCmd() *cobra.Command {
	return workloadChange("resume <workload> [--force --reason WHY [--by WHO]]",
		"Lift a paused workload's pause; over its cap only with --force, until the next reconciliation run",
		"  hookline workload resume workload-7\n  hookline workload resume workload-7 --force --reason \"drain the queue\"",
		func(cmd *cobra.Command) (func() error, func(context.Context, *spend.Spend, string) error) {
			force := cmd.Flags().Bool("force", false, "resume although the total is over the cap; the next reconciliation run pauses it again, with a page, while it is still over")
			reason := cmd.Flags().String("reason", "", "why the workload is resumed over its cap (required with --force)")
			by := cmd.Flags().String("by", os.Getenv("USER"), "who resumes it over its cap (default $USER)")
			return func() error {
					if *force && (strings.TrimSpace(*reason) == "" || strings.TrimSpace(*by) == "") {
						return usageErrorf("--force needs --reason and --by (or $USER)")
					}
					return nil
				}, func(ctx context.Context, l *spend.Spend, id string) error {
					if *force {
						_, err := l.Caps.ForceResume(ctx, id, *by, *reason)
						return err
					}
					_, err := l.Caps.Resume(ctx, id)
					return overCapHint(err, id)
				}
		})
}

// overCapHint adds to a resume refused over the cap how to lift it.
func overCapHint(err error, id string) error {
	var over *spend.OverCapError
	if !errors.As(err, &over) {
		return err
	}
	return fmt.Errorf("%w: raise the cap above %d first (hookline workload set-cap %s --cap N), "+
		"or resume on purpose with --force --reason WHY (the next reconciliation run pauses it again while it is over)",
		err, over.Total, id)
}

// workloadChangeJSON is what a state-changing workload command prints with
// --json: each changed field as [before, after].
type workloadChangeJSON struct {
	Action   string            `json:"action"`
	Workload string            `json:"workload"`
	Changed  map[string][2]any `json:"changed"`
	After    ops.WorkloadView  `json:"after"`
}

// printChange prints what action changed on a workload: every field whose
// value differs, as before -> after, then the workload as it now is; a new
// workload is one line of all its fields.
func printChange(out io.Writer, action string, before *spend.Workload, after spend.Workload, asJSON bool) int {
	a := ops.ViewWorkload(after)
	var b ops.WorkloadView
	if before != nil {
		b = ops.ViewWorkload(*before)
	}
	fields := []struct {
		name     string
		from, to any
	}{
		{"status", b.Status, a.Status}, {"owner", b.Owner, a.Owner}, {"cap", b.Cap, a.Cap},
		{"step", b.Step, a.Step}, {"hold", b.Hold, a.Hold}, {"cap_epoch", b.CapEpoch, a.CapEpoch},
		{"escalation_level", b.EscalationLevel, a.EscalationLevel},
		{"override_by", b.OverrideBy, a.OverrideBy}, {"override_reason", b.OverrideReason, a.OverrideReason},
	}
	changed := map[string][2]any{}
	var text []string
	for _, f := range fields {
		if (before != nil && f.from == f.to) || (before == nil && f.to == "") {
			continue
		}
		changed[f.name] = [2]any{f.from, f.to}
		if before == nil {
			text = append(text, fmt.Sprintf("%s=%v", f.name, f.to))
		} else {
			text = append(text, fmt.Sprintf("%s %v -> %v", f.name, f.from, f.to))
		}
	}
	if asJSON {
		if err := writeJSON(out, workloadChangeJSON{Action: action, Workload: a.ID, Changed: changed, After: a}); err != nil {
			return exitFailure
		}
		return exitOK
	}
	if len(text) == 0 {
		text = []string{"nothing changed"}
	}
	fmt.Fprintf(out, "%s: workload %s: %s\n", action, a.ID, strings.Join(text, ", "))
	if before == nil {
		return exitOK // the line above holds every field of a new workload
	}
	fmt.Fprintf(out, "now: status=%s owner=%s total=%d cap=%d step=%d hold=%t cap_epoch=%d\n",
		a.Status, a.Owner, a.Total, a.Cap, a.Step, a.Hold, a.CapEpoch)
	return exitOK
}
