package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/hookline/hookline/pkg/ops"
)

const dlqUsage = `usage:
  hookline dlq list [--json]
  hookline dlq peek <queue> [--max N] [--json]
  hookline dlq redrive <queue> [--dry-run] [--skip-completed] [--rate N] [--max N] [--json]
  hookline dlq redrive <queue> --native [--rate N] [--no-wait] [--dry-run] [--json]
  hookline dlq status <queue> [--json]`

// dlqCmd dispatches the dead-letter queue subcommands.
func dlqCmd(ctx context.Context, args []string, out io.Writer) int {
	if len(args) == 0 {
		return usageError("dlq", "a subcommand is required\n%s", dlqUsage)
	}
	switch args[0] {
	case "list":
		return dlqListCmd(ctx, args[1:], out)
	case "peek":
		return dlqPeekCmd(ctx, args[1:], out)
	case "redrive":
		return dlqRedriveCmd(ctx, args[1:], out)
	case "status":
		return dlqStatusCmd(ctx, args[1:], out)
	}
	return usageError("dlq", "unknown subcommand %q\n%s", args[0], dlqUsage)
}

func dlqListCmd(ctx context.Context, args []string, out io.Writer) int {
	fs, asJSON, verbose := newFlags("dlq list")
	pos, err := parseInterleaved(fs, args)
	if err != nil || len(pos) != 0 {
		return usageError("dlq list", "takes no arguments\n%s", dlqUsage)
	}
	s, code := connectOrFail(ctx, "dlq list", *verbose)
	if s == nil {
		return code
	}
	list, err := s.ops.ListDLQs(ctx)
	if err != nil {
		return fail("dlq list", err)
	}
	if *asJSON {
		writeJSON(out, list)
	} else {
		tw := newTable(out)
		fmt.Fprintln(tw, "DLQ\tSOURCE\tDEPTH\tVISIBLE\tIN FLIGHT\tOLDEST")
		for _, d := range list {
			if d.Error != "" {
				fmt.Fprintf(tw, "%s\t%s\t?\t?\t?\terror: %s\n", d.Name, d.Source, d.Error)
				continue
			}
			oldest := "-"
			switch {
			case d.AgeKnown:
				oldest = "~" + age(d.OldestAge)
			case d.Depth > 0:
				oldest = "n/a"
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\n", d.Name, d.Source, d.Depth, d.Visible, d.InFlight, oldest)
		}
		tw.Flush()
	}
	for _, d := range list {
		if d.Error != "" {
			s.hint("dlq list")
			return exitPartial
		}
	}
	return exitOK
}

func dlqPeekCmd(ctx context.Context, args []string, out io.Writer) int {
	fs, asJSON, verbose := newFlags("dlq peek")
	limit := fs.Int("max", 10, "show at most N messages")
	pos, err := parseInterleaved(fs, args)
	if err != nil || len(pos) != 1 || *limit <= 0 {
		return usageError("dlq peek", "one queue and a positive --max are required\n%s", dlqUsage)
	}
	s, code := connectOrFail(ctx, "dlq peek", *verbose)
	if s == nil {
		return code
	}
	msgs, err := s.ops.Peek(ctx, pos[0], *limit)
	if err != nil {
		code := fail("dlq peek", err)
		if code == exitFailure {
			s.hint("dlq peek")
		}
		return code
	}
	if *asJSON {
		if msgs == nil {
			msgs = []ops.Message{}
		}
		writeJSON(out, msgs)
		return exitOK
	}
	if len(msgs) == 0 {
		fmt.Fprintf(out, "%s is empty\n", pos[0])
		return exitOK
	}
	tw := newTable(out)
	fmt.Fprintln(tw, "EVENT\tSOURCE\tRECEIVES\tFIRST FAILURE\tLAST FAILURE\tFAILED AT\tKEY\tSTATUS")
	for _, m := range msgs {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", orDash(m.EventID), orDash(m.Source), m.ReceiveCount,
			orDash(m.FirstFailureReason), orDash(m.FailureReason), orDash(m.FailedAt), orDash(m.Status.Key), statusText(m.Status))
	}
	tw.Flush()
	fmt.Fprintf(out, "%d message(s) shown; all are visible again in %s\n", len(msgs), pos[0])
	return exitOK
}

func statusText(st ops.Status) string {
	if st.Error != "" {
		return st.State + " (" + st.Error + ")"
	}
	return st.State
}

func dlqRedriveCmd(ctx context.Context, args []string, out io.Writer) int {
	fs, asJSON, verbose := newFlags("dlq redrive")
	dryRun := fs.Bool("dry-run", false, "print what would happen to each message and change nothing")
	skip := fs.Bool("skip-completed", false, "delete, without resending, messages whose effect is already recorded")
	rate := fs.Float64("rate", 0, "at most N messages per second (0: no limit)")
	limit := fs.Int("max", 0, "handle at most N messages (0: all)")
	native := fs.Bool("native", false, "use an SQS message move task: a bulk move with no per-message checks")
	noWait := fs.Bool("no-wait", false, "with --native, start the task and return")
	pos, err := parseInterleaved(fs, args)
	switch {
	case err != nil || len(pos) != 1:
		return usageError("dlq redrive", "one queue is required\n%s", dlqUsage)
	case *rate < 0 || *limit < 0:
		return usageError("dlq redrive", "--rate and --max must not be negative")
	case *native && (*skip || *limit > 0):
		return usageError("dlq redrive", "--native moves everything: --skip-completed and --max need the safe path")
	case *noWait && !*native:
		return usageError("dlq redrive", "--no-wait applies to --native")
	}
	s, code := connectOrFail(ctx, "dlq redrive", *verbose)
	if s == nil {
		return code
	}
	if *native {
		return nativeRedrive(ctx, s, out, pos[0], int(*rate), *dryRun, !*noWait, *asJSON)
	}
	p := newProgress("redrive " + pos[0])
	rep, err := s.ops.Redrive(ctx, ops.RedriveOptions{Queue: pos[0], DryRun: *dryRun, SkipCompleted: *skip,
		Rate: *rate, Max: *limit, Progress: p.callback()})
	p.done()
	if err != nil {
		code := fail("dlq redrive", err)
		if code == exitFailure {
			s.hint("dlq redrive")
		}
		if len(rep.Items) == 0 {
			return code
		}
		// A receive failed midway: report what was done before it.
		writeRedrive(out, rep, *asJSON)
		return exitPartial
	}
	writeRedrive(out, rep, *asJSON)
	if rep.Partial() {
		return exitPartial
	}
	return exitOK
}

func writeRedrive(out io.Writer, rep ops.RedriveReport, asJSON bool) {
	if asJSON {
		if rep.Items == nil {
			rep.Items = []ops.RedriveItem{}
		}
		writeJSON(out, rep)
		return
	}
	if len(rep.Items) > 0 {
		tw := newTable(out)
		fmt.Fprintln(tw, "OUTCOME\tEVENT\tKEY\tSTATUS\tDETAIL")
		for _, it := range rep.Items {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", it.Outcome, orDash(it.EventID), orDash(it.Status.Key), statusText(it.Status), orDash(it.Error))
		}
		tw.Flush()
	}
	verb := []string{"moved", "skipped"}
	if rep.DryRun {
		verb = []string{"would move", "would skip"}
	}
	fmt.Fprintf(out, "%s: %s %d to %s, %s %d, failed %d in %s", rep.Queue, verb[0], rep.Moved, rep.Source, verb[1], rep.Skipped,
		rep.Failed, rep.Elapsed.Round(time.Millisecond))
	if rep.DryRun {
		fmt.Fprint(out, " (dry run: nothing changed)")
	}
	if rep.Interrupted {
		fmt.Fprint(out, " (interrupted: the rest stays in the queue)")
	}
	fmt.Fprintln(out)
}

func nativeRedrive(ctx context.Context, s *opsConn, out io.Writer, queue string, rate int, dryRun, wait, asJSON bool) int {
	dlq, src, err := s.resolver.DeadLetterQueue(queue)
	if err != nil {
		return fail("dlq redrive", err)
	}
	if dryRun {
		list, err := s.ops.ListDLQs(ctx)
		if err != nil {
			return fail("dlq redrive", err)
		}
		for _, d := range list {
			if d.Name == dlq.Name {
				if asJSON {
					writeJSON(out, map[string]any{"dry_run": true, "queue": d.Name, "source": src.Name, "would_move": d.Visible})
				} else {
					fmt.Fprintf(out, "would start an SQS move task of ~%d message(s) from %s to %s, with no per-message checks (dry run: nothing changed)\n",
						d.Visible, d.Name, src.Name)
				}
			}
		}
		return exitOK
	}
	task, err := s.ops.StartMove(ctx, dlq.Name, rate)
	if err != nil {
		s.hint("dlq redrive")
		return fail("dlq redrive", err)
	}
	if !wait {
		writeTasks(out, []ops.MoveTask{task}, asJSON)
		if !asJSON {
			fmt.Fprintf(out, "started; follow it with: hookline dlq status %s\n", dlq.Name)
		}
		return exitOK
	}
	p := newProgress("move " + dlq.Name)
	final, err := s.ops.WaitMove(ctx, dlq.Name, task.Handle, time.Second, func(t ops.MoveTask) {
		p.update(ops.Progress{Done: int(t.Moved), Total: int(t.ToMove), Elapsed: time.Since(t.StartedAt)})
	})
	p.done()
	if errors.Is(err, context.Canceled) {
		fmt.Fprintf(stderr, "stopped waiting; the task goes on: hookline dlq status %s\n", dlq.Name)
		writeTasks(out, []ops.MoveTask{final}, asJSON)
		return exitPartial
	}
	if err != nil {
		return fail("dlq redrive", err)
	}
	writeTasks(out, []ops.MoveTask{final}, asJSON)
	if final.Status != ops.MoveCompleted {
		return exitFailure
	}
	return exitOK
}

func dlqStatusCmd(ctx context.Context, args []string, out io.Writer) int {
	fs, asJSON, verbose := newFlags("dlq status")
	pos, err := parseInterleaved(fs, args)
	if err != nil || len(pos) != 1 {
		return usageError("dlq status", "one queue is required\n%s", dlqUsage)
	}
	s, code := connectOrFail(ctx, "dlq status", *verbose)
	if s == nil {
		return code
	}
	tasks, err := s.ops.MoveTasks(ctx, pos[0])
	if err != nil {
		code := fail("dlq status", err)
		if code == exitFailure {
			s.hint("dlq status")
		}
		return code
	}
	if len(tasks) == 0 && !*asJSON {
		fmt.Fprintf(out, "no move tasks on %s\n", pos[0])
		return exitOK
	}
	writeTasks(out, tasks, *asJSON)
	return exitOK
}

func writeTasks(out io.Writer, tasks []ops.MoveTask, asJSON bool) {
	if asJSON {
		if tasks == nil {
			tasks = []ops.MoveTask{}
		}
		writeJSON(out, tasks)
		return
	}
	tw := newTable(out)
	fmt.Fprintln(tw, "STATUS\tMOVED\tTO MOVE\tSTARTED\tRATE\tFAILURE\tHANDLE")
	for _, t := range tasks {
		rate := "default"
		if t.Rate > 0 {
			rate = fmt.Sprintf("%d/s", t.Rate)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\n", t.Status, t.Moved, t.ToMove, t.StartedAt.Format(time.RFC3339), rate,
			orDash(t.FailureReason), orDash(t.Handle))
	}
	tw.Flush()
}
