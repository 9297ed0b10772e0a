//go:build !linux

package stripecharge_test

import "os/exec"

// dieWithParent has no kernel support outside Linux: the test's cleanup
// kills stripe-mock.
func dieWithParent(*exec.Cmd) {}
