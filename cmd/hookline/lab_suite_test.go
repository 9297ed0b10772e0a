//go:build !oncall

package main

import (
	"testing"

	"github.com/hookline/hookline/internal/dev/lab"
)

// TestSuiteRunsAddARealisticBody: with --suite-payload the suite runs a
// fourth experiment, idempotency on, with that body and named after it;
// the other three keep the small one.
func TestSuiteRunsAddARealisticBody(t *testing.T) {
	small, err := lab.SizedPayload(0)
	if err != nil {
		t.Fatal(err)
	}
	base := lab.Config{Rate: 10, Payload: small}
	runs, err := suiteRuns(base, "../../testdata/payloads/stripe-invoice-finalized.json", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 4 {
		t.Fatalf("%d runs, want 4", len(runs))
	}
	last := runs[3]
	if last.Name != "idempotency-on-stripe-invoice-finalized" || !last.Idempotency || last.Payload.Size < 4096 {
		t.Fatalf("fourth run %q, idempotency %v, body %d bytes", last.Name, last.Idempotency, last.Payload.Size)
	}
	for _, r := range runs[:3] {
		if r.Payload.Size != small.Size {
			t.Fatalf("%s: body %d bytes, want the small %d", r.Name, r.Payload.Size, small.Size)
		}
	}
	if runs, err := suiteRuns(base, "", 0); err != nil || len(runs) != 3 {
		t.Fatalf("without a payload: %d runs, %v", len(runs), err)
	}
	if _, err := suiteRuns(base, "no-such-file.json", 0); err == nil {
		t.Fatal("a missing body was taken")
	}
}
