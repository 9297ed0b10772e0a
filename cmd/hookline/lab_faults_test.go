package main

import (
	"strings"
	"testing"

	"github.com/hookline/hookline/internal/dev/localaws"
)

// TestLabRefusesBadFaults: the lab reads HOOKLINE_LOCAL_AWS_FAULTS as
// hookline run does, and a bad value is refused with exit 2 and a message
// naming the pair, before any load is offered.
func TestLabRefusesBadFaults(t *testing.T) {
	for _, args := range [][]string{
		{"lab", "--rate", "10", "--duration", "1s", "--warmup", "0s", "--burst", "10"},
		{"lab", "serve", "--addr", "127.0.0.1:0"},
	} {
		t.Setenv(localaws.FaultsEnv, "seed=7,ddb-error=2")
		code, _, errOut := execute(t, args...)
		if code != exitUsage || !strings.Contains(errOut, "ddb-error=2") {
			t.Errorf("%v with %s=seed=7,ddb-error=2: exit %d, stderr %q; want %d naming the pair", args, localaws.FaultsEnv, code, errOut, exitUsage)
		}
	}
}
