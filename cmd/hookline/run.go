package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/hookline/hookline/pkg/localrun"
)

func runCmd(ctx context.Context, args []string, out io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	verbose := fs.Bool("v", false, "debug logging")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	sys, err := localrun.Start(ctx, localrun.Config{Logger: logger(*verbose), Out: out})
	if err != nil {
		fmt.Fprintln(os.Stderr, "hookline run:", err)
		return exitFailure
	}
	fmt.Fprintln(out, "ready; Ctrl-C stops everything")
	<-ctx.Done()
	fmt.Fprintln(out, "stopping")
	if err := sys.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "hookline run: stop:", err)
		return exitFailure
	}
	return exitOK
}
