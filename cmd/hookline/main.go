package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// Exit codes shared by every subcommand.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
	exitPartial = 3
)

type command struct {
	name  string
	usage string
	run   func(ctx context.Context, args []string, out io.Writer) int
}

func commands() []command {
	return []command{
		{"run", "run the whole system locally on embedded AWS until Ctrl-C", runCmd},
		{"send-webhook", "sign a JSON file and post it like a provider (--source, --file, --url, --tamper)", sendWebhookCmd},
		{"dlq", "dead-letter queues: list, peek <queue>, redrive <queue>, status <queue>", dlqCmd},
		{"replay", "re-enqueue intake records by --event or --since/--until (--source)", replayCmd},
		{"explain", "the runbook on one screen: explain <workload> or --event <id>", explainCmd},
		{"workload", "workloads: create, set-cap, set-step, set-hold, add-alias, retire, resume, list", workloadCmd},
		{"admission", "ask whether a workload may start new work (200 allowed, 423 paused)", admissionCmd},
		{"send-usage", "record usage at the local provider, which sends its webhook (--workload, --units, --drop-webhook)", sendUsageCmd},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := dispatch(ctx, os.Args[1:], os.Stdout)
	stop()
	os.Exit(code)
}

func dispatch(ctx context.Context, args []string, out io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(out)
		return exitOK
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, args[1:], out)
		}
	}
	fmt.Fprintf(os.Stderr, "hookline: unknown command %q\n", args[0])
	usage(os.Stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: hookline <command> [flags]\n\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-14s %s\n", c.name, c.usage)
	}
}

func logger(verbose bool) *slog.Logger {
	level := slog.LevelInfo
	if verbose {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}
