package stripeusage_test

import (
	"os/exec"
	"syscall"
)

// orphanProof has the kernel kill the child when this test binary dies,
// however it dies.
func orphanProof(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
