package localaws

import (
	"os/exec"
	"syscall"
)

// setDeathSignal asks the kernel to kill the child when the parent dies,
// even by SIGKILL, and puts the child in a process group of its own, so
// that a terminal's Ctrl-C (SIGINT to the foreground group) reaches only
// the parent, which stops the pollers before it stops the child.
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}
