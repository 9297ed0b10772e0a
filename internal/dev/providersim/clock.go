package providersim

import (
	"time"

	"github.com/hookline/hookline/internal/testkit"
)

// ManualClock is a clock that moves only when told to ([testkit.ManualClock]).
// Pass its Now method as [Config.Now] to control when usage records become
// visible.
type ManualClock = testkit.ManualClock

// NewManualClock returns a clock that reads t.
func NewManualClock(t time.Time) *ManualClock { return testkit.NewManualClock(t) }
