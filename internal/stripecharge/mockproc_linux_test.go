package stripecharge_test

import (
	"os/exec"
	"syscall"
)

// dieWithParent asks the kernel to kill stripe-mock when the test process
// dies, even by SIGKILL.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
