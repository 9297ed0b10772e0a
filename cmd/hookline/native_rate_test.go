package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestNativeRedriveRefusesARateItCannotHonour: an SQS move task takes its
// rate as a whole number of messages a second, at most 500
// (StartMessageMoveTask, MaxNumberOfMessagesPerSecond), and reads none as
// no limit. A rate it cannot take is refused as a bad flag before any
// task starts: cut to a whole number, --rate 0.5 would have become 0, a
// move as fast as SQS goes.
func TestNativeRedriveRefusesARateItCannotHonour(t *testing.T) {
	// Given two dead-lettered messages
	env := cliEnv(t)
	deadLetter(t, env, "evt_1")
	deadLetter(t, env, "evt_2")
	waitVisible(t, env, "payments-dlq", 2)
	for _, rate := range []string{"0.5", "1.5", "501"} {
		t.Run(rate, func(t *testing.T) {
			var errs bytes.Buffer
			old := stderr
			stderr = &errs
			defer func() { stderr = old }()
			// when a native redrive is asked at that rate
			code, out := run(t, "dlq", "redrive", "payments-dlq", "--native", "--rate", rate)
			// then it is refused as a usage error that says why
			if code != exitUsage {
				t.Fatalf("exit %d, want %d; output:\n%s%s", code, exitUsage, out, errs.String())
			}
			if msg := errs.String(); !strings.Contains(msg, "--rate") || !strings.Contains(msg, "500") {
				t.Fatalf("the refusal does not say what --native takes:\n%s", msg)
			}
		})
	}
	// and nothing was moved
	if n := visible(t, env, "payments-dlq"); n != 2 {
		t.Fatalf("payments-dlq holds %d messages, want the 2 it had", n)
	}
}
