package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/hookline/hookline/pkg/ops"
	"github.com/hookline/hookline/pkg/spend"
)

const workloadUsage = `usage:
  hookline workload create --id ID --owner OWNER --route ROUTING_KEY --cap N [--step N] [--hold]
  hookline workload set-cap <id> --cap N
  hookline workload set-step <id> --step N
  hookline workload set-hold <id> --hold=true|false
  hookline workload add-alias <id> --ref PROVIDER_REF
  hookline workload retire <id>
  hookline workload resume <id>
  hookline workload list [--json]`

// workloadCmd administers workloads: registration, caps, aliases,
// retirement and the operator's resume after a pause.
func workloadCmd(ctx context.Context, args []string, out io.Writer) int {
	if len(args) == 0 {
		return usageError("workload", "a subcommand is required\n%s", workloadUsage)
	}
	sub, args := args[0], args[1:]
	fs, asJSON, verbose := newFlags("workload " + sub)
	id := fs.String("id", "", "workload ID")
	owner := fs.String("owner", "", "owner paged on a cap trip (create)")
	route := fs.String("route", "", "the owner's PagerDuty routing key; never printed (create)")
	capUnits := fs.Int64("cap", 0, "cap in spend units (create, set-cap)")
	step := fs.Int64("step", 0, "escalation step: one more page per step over the cap; 0 turns it off (create, set-step)")
	hold := fs.Bool("hold", false, "hold, rather than page, unresolved amounts past their deadline (create, set-hold)")
	ref := fs.String("ref", "", "provider workload reference (add-alias)")
	pos, err := parseInterleaved(fs, args)
	if err != nil || len(pos) > 1 {
		return usageError("workload "+sub, "bad arguments\n%s", workloadUsage)
	}
	if len(pos) == 1 {
		if *id != "" && *id != pos[0] {
			return usageError("workload "+sub, "two different IDs given")
		}
		*id = pos[0]
	}
	switch sub {
	case "list":
	case "create", "set-cap", "set-step", "set-hold", "add-alias", "retire", "resume":
		if *id == "" {
			return usageError("workload "+sub, "a workload ID is required\n%s", workloadUsage)
		}
	default:
		return usageError("workload", "unknown subcommand %q\n%s", sub, workloadUsage)
	}
	s, code := connectOrFail(ctx, "workload "+sub, *verbose)
	if s == nil {
		return code
	}
	l := s.ledger
	switch sub {
	case "list":
		ws, err := l.List(ctx)
		if err != nil {
			s.hint("workload list")
			return fail("workload list", err)
		}
		views := make([]ops.WorkloadView, 0, len(ws))
		for _, w := range ws {
			views = append(views, ops.ViewWorkload(w))
		}
		if *asJSON {
			writeJSON(out, views)
			return exitOK
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
		return exitOK
	case "create":
		w, err := l.CreateWorkload(ctx, spend.NewWorkload{ID: *id, Owner: *owner, Route: *route, Cap: *capUnits, Step: *step, Hold: *hold})
		if err != nil {
			return fail("workload create", err)
		}
		return printWorkload(out, "created", w, *asJSON)
	case "set-cap":
		if *capUnits <= 0 {
			return usageError("workload set-cap", "--cap must be positive")
		}
		err = l.SetCap(ctx, *id, *capUnits)
	case "set-step":
		err = l.SetStep(ctx, *id, *step)
	case "set-hold":
		err = l.SetHold(ctx, *id, *hold)
	case "add-alias":
		if *ref == "" {
			return usageError("workload add-alias", "--ref is required")
		}
		err = l.AddAlias(ctx, *ref, *id)
	case "retire":
		err = l.Retire(ctx, *id)
	case "resume":
		var w spend.Workload
		if w, err = l.Resume(ctx, *id); err == nil {
			return printWorkload(out, "resumed", w, *asJSON)
		}
	}
	if err != nil {
		return fail("workload "+sub, err)
	}
	w, err := l.Get(ctx, *id)
	if err != nil {
		return fail("workload "+sub, err)
	}
	return printWorkload(out, sub+" done", w, *asJSON)
}

func printWorkload(out io.Writer, what string, w spend.Workload, asJSON bool) int {
	v := ops.ViewWorkload(w)
	if asJSON {
		writeJSON(out, v)
		return exitOK
	}
	fmt.Fprintf(out, "%s: workload %s status=%s owner=%s total=%d cap=%d step=%d hold=%t cap_epoch=%d\n",
		what, v.ID, v.Status, v.Owner, v.Total, v.Cap, v.Step, v.Hold, v.CapEpoch)
	return exitOK
}
