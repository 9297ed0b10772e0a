package lambdalocal

import "testing"

func TestBatchAskFollowsWhatTheQueueHeld(t *testing.T) {
	a := NewBatchAsk(10)
	steps := []struct{ found, wantNext int }{
		{3, 3},   // asked 10, found 3: ask for 3
		{3, 6},   // found all 3 asked: double
		{6, 10},  // found all 6: double, capped at 10
		{10, 10}, // full batches stay full
		{0, 1},   // an empty queue: ask for one
		{1, 2},
	}
	for i, s := range steps {
		asked := a.Next()
		a.Got(asked, s.found)
		if got := a.Next(); got != s.wantNext {
			t.Fatalf("step %d: asked %d, found %d: next ask %d, want %d", i, asked, s.found, got, s.wantNext)
		}
	}
}
