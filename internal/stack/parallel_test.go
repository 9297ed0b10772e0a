package stack

import (
	"sync"
	"testing"
)

// TestLoadInParallel: parallel tests each load the template; goformation
// keeps its tag handlers in a shared map, so unguarded parses crash the
// process with concurrent map writes.
func TestLoadInParallel(t *testing.T) {
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 5 {
				if _, err := LoadDefault(); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
}
