//go:build !oncall

package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// clockLine is what dev clock prints.
var clockLine = regexp.MustCompile(`^clock (\S+) \((\S+) ahead of wall time\)\n$`)

// readClock parses dev clock's line into the run's time and how far it
// is ahead.
func readClock(t *testing.T, out string) (time.Time, string) {
	t.Helper()
	m := clockLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("not a clock line: %q", out)
	}
	at, err := time.Parse(time.RFC3339, m[1])
	if err != nil {
		t.Fatal(err)
	}
	return at, m[2]
}

// TestDevClockAdvanceAgainstALocalRun: against `hookline run`, `hookline
// dev clock advance 720h` moves the run's clock, `dev clock` shows it,
// a move back is a usage error that says why, and send-webhook and
// send-usage sign with the moved clock, so that the receiver accepts
// them.
func TestDevClockAdvanceAgainstALocalRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole local system")
	}
	// Given `hookline run` at wall time
	startRun(t)
	code, out, errOut := execute(t, "dev", "clock")
	if code != exitOK {
		t.Fatalf("dev clock: exit %d, %s", code, errOut)
	}
	if _, ahead := readClock(t, out); ahead != "0s" {
		t.Fatalf("a fresh run's clock is %s ahead", ahead)
	}

	// When the clock is advanced 720 h
	wall := time.Now()
	code, out, errOut = execute(t, "dev", "clock", "advance", "720h")
	if code != exitOK {
		t.Fatalf("dev clock advance: exit %d, %s", code, errOut)
	}
	// Then it reads 720 h ahead, and dev clock says so too
	at, ahead := readClock(t, out)
	if ahead != "720h0m0s" || at.Before(wall.Add(720*time.Hour).Truncate(time.Second)) {
		t.Fatalf("after the advance: %q", out)
	}
	if code, out, _ := execute(t, "dev", "clock", "--json"); code != exitOK || !strings.Contains(out, `"ahead": "720h0m0s"`) {
		t.Fatalf("dev clock --json: exit %d, %s", code, out)
	}

	// When it is set back, or advanced by no time, then it is a usage
	// error naming why, and the clock stays
	for _, tc := range []struct {
		args []string
		want string
	}{
		{args: []string{"set", wall.UTC().Format(time.RFC3339)}, want: "the clock only moves forward"},
		{args: []string{"advance", "0s"}, want: "want a positive duration"},
		{args: []string{"advance", "a-month"}, want: "want a positive duration"},
	} {
		code, _, errOut := execute(t, append([]string{"dev", "clock"}, tc.args...)...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Fatalf("dev clock %v: exit %d, %q; want %d and %q", tc.args, code, errOut, exitUsage, tc.want)
		}
	}
	if _, ahead := readClock(t, func() string { _, out, _ := execute(t, "dev", "clock"); return out }()); ahead != "720h0m0s" {
		t.Fatalf("after refused moves the clock is %s ahead", ahead)
	}

	// When a payment webhook and usage are sent, they are signed at the
	// run's time and accepted
	code, out, errOut = execute(t, "dev", "send-webhook", "--source", "payments", "--file", "testdata/payments/payment_requested.json", "--attempts", "1")
	if code != exitOK || !strings.Contains(out, "attempt 1: 200") {
		t.Fatalf("send-webhook after the advance: exit %d\n%s%s", code, out, errOut)
	}
	for _, args := range [][]string{
		{"workload", "create", "wl-clock", "--owner", "o", "--routing-key", "rk", "--cap", "1000"},
		{"workload", "add-alias", "wl-clock", "--ref", "img-clock"},
	} {
		if code, out, errOut := execute(t, args...); code != exitOK {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
	}
	code, out, errOut = execute(t, "dev", "send-usage", "--workload", "img-clock", "--units", "5", "--record", "ur_clock_cli")
	if code != exitOK || !strings.Contains(out, `"receiver_status":200`) {
		t.Fatalf("send-usage after the advance: exit %d\n%s%s", code, out, errOut)
	}

	// and workload explain reads the run's clock too: the next
	// reconciliation falls on the moved clock, seconds away, not 720 h
	proof := regexp.MustCompile(`(?m)^proof\s+.* at (\S+) \((.*)\)$`)
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, out, _ := execute(t, "workload", "explain", "wl-clock")
		m := proof.FindStringSubmatch(out)
		if m != nil && strings.Contains(out, "ur_clock_cli") {
			next, err := time.Parse(time.RFC3339, m[1])
			if err != nil || next.Before(wall.Add(720*time.Hour).Truncate(time.Second)) || strings.Contains(m[2], "h") {
				t.Fatalf("explain reads wall time: %s", m[0])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("explain never showed ur_clock_cli:\n%s", out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestDevClockWithoutALocalRun: with no local run in the directory, dev
// clock says how to start one (exit 2).
func TestDevClockWithoutALocalRun(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv(controlURLVar, "")
	os.Unsetenv(controlURLVar)
	code, _, errOut := execute(t, "dev", "clock", "advance", "720h")
	if code != exitUsage || !strings.Contains(errOut, "no local run found: start one with make run") {
		t.Fatalf("exit %d, %q; want %d and how to start a run", code, errOut, exitUsage)
	}
}
