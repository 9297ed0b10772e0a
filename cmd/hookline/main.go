package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

// Exit codes shared by every subcommand.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
	exitPartial = 3
)

// exitError carries a command's exit code through cobra. The command has
// already printed what went wrong.
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("hookline: exit %d", e.code) }

// exit turns an exit code into the error a cobra RunE returns.
func exit(code int) error {
	if code == exitOK {
		return nil
	}
	return &exitError{code: code}
}

// usageErrorf is a usage error found after flag parsing (a bad value, or
// flags that contradict each other). Cobra's own errors (unknown command
// or flag, missing required flag, wrong number of arguments) are usage
// errors too.
func usageErrorf(format string, args ...any) error {
	return fmt.Errorf(format, args...)
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := dispatch(ctx, os.Args[1:], os.Stdout)
	stop()
	os.Exit(code)
}

// dispatch runs the command line args, writing results to out and errors
// to stderr, and returns the exit code.
func dispatch(ctx context.Context, args []string, out io.Writer) int {
	root := newRoot()
	root.SetArgs(args)
	root.SetOut(out)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	// Anything else was refused before the command ran: nothing changed.
	path := "hookline"
	if cmd != nil {
		path = cmd.CommandPath()
	}
	fmt.Fprintf(stderr, "%s: %v\nRun '%s --help' for usage.\n", path, err, path)
	return exitUsage
}

// verbose is the root's persistent -v flag.
var verbose bool

// newRoot builds the whole command tree. Every command has its own flag
// set; only -v is shared.
func newRoot() *cobra.Command {
	verbose = false
	root := group("hookline", "Operate hookline: explain pages, administer workloads, inspect and redrive DLQs, replay intake")
	root.Long = `hookline operates a hookline deployment, or the local system of 'hookline run'.

Commands are noun-verb: hookline <noun> <verb> [args] [flags]. Commands that
print a result take --json. Commands that change state print what they
changed. Exit codes: 0 ok, 1 failure, 2 usage (nothing was changed), 3 partial.

Against AWS the standard credential chain and AWS_ENDPOINT_URL* decide where
commands go; queue and table names come from the template built into this
binary (HOOKLINE_TEMPLATE names another file). While 'hookline run' is up,
commands in the same directory reach its local AWS through
.hookline/endpoints.env.` + whereNote
	root.SilenceErrors = true
	root.SilenceUsage = true
	root.PersistentFlags().BoolVarP(&verbose, "verbose", "v", false, "debug logging on stderr")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return err })
	root.AddGroup(
		&cobra.Group{ID: "oncall", Title: "On-call commands:"},
		&cobra.Group{ID: "dev", Title: "Local system and developer commands:"},
	)
	for _, c := range []*cobra.Command{newWorkloadCmd(), newEventCmd(), newDLQCmd(), newIntakeCmd()} {
		c.GroupID = "oncall"
		root.AddCommand(c)
	}
	for _, c := range devCommands() {
		c.GroupID = "dev"
		root.AddCommand(c)
	}
	root.SetHelpCommandGroupID("oncall")
	root.SetCompletionCommandGroupID("oncall")
	return root
}

// group returns a command that only holds subcommands: alone it prints its
// help; with an argument it is an unknown subcommand.
func group(use, short string) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("unknown command %q for %q (subcommands: %s)", args[0], cmd.CommandPath(), subcommandNames(cmd))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
}

func subcommandNames(cmd *cobra.Command) string {
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	return strings.Join(names, ", ")
}

// require marks flags required. It fails only for a flag the command does
// not define, which the grammar test would catch as a missing refusal.
func require(cmd *cobra.Command, names ...string) {
	for _, n := range names {
		_ = cmd.MarkFlagRequired(n)
	}
}

// jsonFlag adds --json to cmd.
func jsonFlag(cmd *cobra.Command) *bool {
	return cmd.Flags().Bool("json", false, "print JSON for scripts instead of text")
}

func logger(verbose bool) *slog.Logger {
	level := slog.LevelInfo
	if verbose {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
}
