package localaws

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
)

// StartForTest starts local AWS for one test and stops it at cleanup. When
// the run targets an external endpoint, resource names get a random prefix
// so concurrent test runs never share queues or tables.
func StartForTest(t testing.TB) *Env {
	t.Helper()
	opts := Options{}
	if External() {
		opts.Prefix = fmt.Sprintf("t%08x-", rand.Uint32())
	}
	env, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatalf("start local aws: %v", err)
	}
	t.Cleanup(func() { env.Close() })
	return env
}
