package localaws

import (
	"os/exec"
	"syscall"
)

// setDeathSignal asks the kernel to kill the child when the parent dies,
// even by SIGKILL.
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
