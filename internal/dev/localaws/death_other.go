//go:build !linux

package localaws

import "os/exec"

// setDeathSignal relies on the child's stdin watch where the kernel offers
// no parent-death signal.
func setDeathSignal(*exec.Cmd) {}
