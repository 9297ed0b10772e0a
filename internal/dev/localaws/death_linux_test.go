package localaws

import (
	"context"
	"log/slog"
	"syscall"
	"testing"

	"github.com/hookline/hookline/internal/stack"
)

// TestSQSEmulatorOutlivesTheTerminalsInterrupt: Ctrl-C in a terminal sends
// SIGINT to its whole foreground process group. The SQS emulator must not
// be in that group, or it dies at once while the event source's pollers
// are still receiving from it (a burst of "connection refused" on every
// Ctrl-C of make run). It is stopped by Close, after the pollers, and by
// the kernel if this process dies.
func TestSQSEmulatorOutlivesTheTerminalsInterrupt(t *testing.T) {
	tmpl, err := stack.LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	p, err := startSQS(context.Background(), tmpl.Path, 0, slog.New(slog.DiscardHandler))
	if err == ErrNoSQSEmulator {
		t.Skip("the SQS emulator is not installed: run make deps")
	}
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	child, err := syscall.Getpgid(p.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if own := syscall.Getpgrp(); child == own {
		t.Fatalf("the SQS emulator shares this process's group %d: a terminal's SIGINT reaches it before the pollers stop", own)
	}
}
