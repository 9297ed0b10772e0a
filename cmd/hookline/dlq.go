package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookline/hookline/internal/ops"
)

// newDLQCmd holds the dead-letter queue commands.
func newDLQCmd() *cobra.Command {
	cmd := group("dlq", "Dead-letter queues: list, peek, redrive, status")
	cmd.AddCommand(newDLQListCmd(), newDLQPeekCmd(), newDLQRedriveCmd(), newDLQStatusCmd())
	return cmd
}

func newDLQListCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list",
		Short: "Every dead-letter queue with its depth and oldest message",
		Args:  cobra.NoArgs,
	}
	asJSON := jsonFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		s, err := connectCmd(cmd)
		if err != nil {
			return err
		}
		list, err := s.ops.ListDLQs(cmd.Context())
		if err != nil {
			return exit(fail("dlq list", err))
		}
		out := cmd.OutOrStdout()
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
				return exit(exitPartial)
			}
		}
		return nil
	}
	return cmd
}

func newDLQPeekCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:               "peek <dlq> [--max N]",
		Short:             "Show messages without consuming them: event, receives, failure reasons, effect status",
		Example:           "  hookline dlq peek payments-dlq --max 20",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeDLQs,
	}
	limit := cmd.Flags().Int("max", 10, "show at most N messages")
	asJSON := jsonFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if *limit <= 0 {
			return usageErrorf("--max must be positive")
		}
		s, err := connectCmd(cmd)
		if err != nil {
			return err
		}
		queue, out := args[0], cmd.OutOrStdout()
		msgs, err := s.ops.Peek(cmd.Context(), queue, *limit)
		if err != nil {
			code := fail("dlq peek", err)
			if code == exitFailure {
				s.hint("dlq peek")
			}
			return exit(code)
		}
		if *asJSON {
			if msgs == nil {
				msgs = []ops.Message{}
			}
			return jsonResult(out, msgs)
		}
		if len(msgs) == 0 {
			fmt.Fprintf(out, "%s is empty\n", queue)
			return nil
		}
		tw := newTable(out)
		fmt.Fprintln(tw, "EVENT\tSOURCE\tRECEIVES\tFIRST FAILURE\tLAST FAILURE\tFAILED AT\tKEY\tSTATUS")
		for _, m := range msgs {
			fmt.Fprintln(tw, peekRow(m))
		}
		tw.Flush()
		fmt.Fprintf(out, "%d message(s) shown; all are visible again in %s\n", len(msgs), queue)
		return nil
	}
	return cmd
}

func newDLQRedriveCmd() *cobra.Command {
	var dryRun, skip, native, noWait bool
	var rate float64
	var limit int
	cmd := &cobra.Command{
		Use:   "redrive <dlq> [--dry-run] [--skip-completed] [--rate N] [--max N] | redrive <dlq> --native [--rate N] [--no-wait]",
		Short: "Send messages back to their source queue, one by one (or as an SQS move task with --native)",
		Long: `Send each message to its source queue before deleting it from the DLQ, so
an interruption never loses one (at worst a copy stays behind, and the
workers' idempotency absorbs it). --skip-completed deletes messages whose
effect is already recorded. --native starts SQS's own bulk move task instead,
with no per-message checks. Preview with --dry-run first.`,
		Example:           "  hookline dlq redrive payments-dlq --dry-run --skip-completed\n  hookline dlq redrive payments-dlq --skip-completed --rate 50",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeDLQs,
	}
	f := cmd.Flags()
	f.BoolVar(&dryRun, "dry-run", false, "print what would happen to each message and change nothing")
	f.BoolVar(&skip, "skip-completed", false, "delete, without resending, messages whose effect is already recorded")
	f.Float64Var(&rate, "rate", 0, "at most N messages per second (0: no limit; with --native a whole number up to 500)")
	f.IntVar(&limit, "max", 0, "handle at most N messages (0: all)")
	f.BoolVar(&native, "native", false, "use an SQS message move task: a bulk move with no per-message checks")
	f.BoolVar(&noWait, "no-wait", false, "with --native, start the task and return")
	asJSON := jsonFlag(cmd)
	cmd.MarkFlagsMutuallyExclusive("native", "skip-completed")
	cmd.MarkFlagsMutuallyExclusive("native", "max")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		switch {
		case rate < 0 || limit < 0:
			return usageErrorf("--rate and --max must not be negative")
		case noWait && !native:
			return usageErrorf("--no-wait applies to --native only")
		case native && (rate != math.Trunc(rate) || rate > ops.MaxMoveRate):
			// SQS takes a whole number, and reads 0 as no limit: 0.5 cut to
			// 0 would move as fast as SQS goes.
			return usageErrorf("--rate %v: with --native it is a whole number of messages a second from 1 to %d (0: SQS's own pace); the one-by-one redrive takes any rate", rate, ops.MaxMoveRate)
		}
		s, err := connectCmd(cmd)
		if err != nil {
			return err
		}
		queue, out := args[0], cmd.OutOrStdout()
		if native {
			return exit(nativeRedrive(cmd.Context(), s, out, queue, int(rate), dryRun, !noWait, *asJSON))
		}
		p := newProgress("redrive " + queue)
		rep, err := s.ops.Redrive(cmd.Context(), ops.RedriveOptions{Queue: queue, DryRun: dryRun, SkipCompleted: skip,
			Rate: rate, Max: limit, Progress: p.callback()})
		p.done()
		if err != nil {
			code := fail("dlq redrive", err)
			if code == exitFailure {
				s.hint("dlq redrive")
			}
			if len(rep.Items) == 0 {
				return exit(code)
			}
			// A receive failed midway: report what was done before it.
			writeRedrive(out, rep, *asJSON)
			return exit(exitPartial)
		}
		writeRedrive(out, rep, *asJSON)
		if rep.Partial() {
			return exit(exitPartial)
		}
		return nil
	}
	return cmd
}

func newDLQStatusCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:               "status <dlq>",
		Short:             "The SQS move tasks of a dead-letter queue",
		Example:           "  hookline dlq status usage-dlq",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeDLQs,
	}
	asJSON := jsonFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		s, err := connectCmd(cmd)
		if err != nil {
			return err
		}
		queue, out := args[0], cmd.OutOrStdout()
		tasks, err := s.ops.MoveTasks(cmd.Context(), queue)
		if err != nil {
			code := fail("dlq status", err)
			if code == exitFailure {
				s.hint("dlq status")
			}
			return exit(code)
		}
		if len(tasks) == 0 && !*asJSON {
			fmt.Fprintf(out, "no move tasks on %s\n", queue)
			return nil
		}
		writeTasks(out, tasks, *asJSON)
		return nil
	}
	return cmd
}

// peekRow is a message's row in dlq peek's table. It names a reason once:
// a last failure equal to the first reads "same", and a status whose check
// failed on what the message failed on reads as its state alone.
func peekRow(m ops.Message) string {
	last, st := orDash(m.FailureReason), m.Status
	if m.FailureReason != "" && m.FailureReason == m.FirstFailureReason {
		last = "same"
	}
	if st.Error != "" && (strings.Contains(m.FailureReason, st.Error) || strings.Contains(m.FirstFailureReason, st.Error)) {
		st.Error = ""
	}
	return fmt.Sprintf("%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s", orDash(m.EventID), orDash(m.Source), m.ReceiveCount,
		orDash(m.FirstFailureReason), last, orDash(m.FailedAt), orDash(m.Status.Key), statusText(st))
}

func statusText(st ops.Status) string { return st.Text() }

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
