package lab_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hookline/hookline/internal/dev/lab"
)

// TestLiveStateKeepsTheLastChanges: the state goes to every page once a
// second, so it must not grow with the commands a lab has taken. After
// 2,000 commands of 4 KB each (whitespace the copilot reads past) the
// state holds the last lab.LiveChanges, each as the command reads, and
// says how many there were.
func TestLiveStateKeepsTheLastChanges(t *testing.T) {
	t.Parallel()
	live, err := lab.StartLive(context.Background(), lab.LiveConfig{Rate: 5, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { live.Close() })
	const commands = 2000
	for i := range commands {
		line := "rate" + strings.Repeat(" ", 4000) + []string{"100", "200"}[i%2]
		if _, err := live.Ask(line); err != nil {
			t.Fatalf("command %d: %v", i, err)
		}
	}
	b, err := live.StateJSON()
	if err != nil {
		t.Fatal(err)
	}
	st := live.State()
	if len(b) > 64<<10 || len(st.Changes) != lab.LiveChanges || st.ChangesTotal != commands {
		t.Fatalf("after %d commands the state is %d bytes with %d changes (of %d said); want at most 64 KiB, the last %d of %d",
			commands, len(b), len(st.Changes), st.ChangesTotal, lab.LiveChanges, commands)
	}
	if last := st.Changes[len(st.Changes)-1]; last.Text != "rate 200" || st.Last == nil || st.Last.Change != last || st.Knobs.Rate != 200 {
		t.Fatalf("the last change %+v, before and after %+v, knobs %+v; want rate 200", last, st.Last, st.Knobs)
	}
}
