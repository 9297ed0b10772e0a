package usagein

import (
	"fmt"
	"time"

	"github.com/hookline/hookline/pkg/provider"
)

// TimeRule is how far from when hookline first saw a record its time may
// lie: MaxAge into the past (the producer's reach: Stripe takes meter
// events 35 days back, Metronome 34), MaxSkew into the future (clock skew).
// Each usage source has one; it applies wherever a record's age matters:
// the door, the spend worker, the export path, and the reconciler's
// horizons, all measured from the record's first sighting.
type TimeRule struct {
	MaxAge  time.Duration
	MaxSkew time.Duration
}

// DefaultTimeRule is the rule of a source that states none: 72 hours
// back ([provider.MaxUsageAge]) and 5 minutes ahead
// ([provider.MaxUsageSkew]), as before rules were per source.
var DefaultTimeRule = TimeRule{MaxAge: provider.MaxUsageAge, MaxSkew: provider.MaxUsageSkew}

// MaxReach bounds a rule's MaxAge: a record older than this could not be
// told from a replay of one the ledger has long settled.
const MaxReach = 400 * 24 * time.Hour

// Validate reports a rule that could not hold.
func (r TimeRule) Validate() error {
	switch {
	case r.MaxAge <= 0 || r.MaxAge > MaxReach:
		return fmt.Errorf("max_age %s outside (0, %s]", r.MaxAge, MaxReach)
	case r.MaxSkew < 0 || r.MaxSkew > 24*time.Hour:
		return fmt.Errorf("max_skew %s outside [0, 24h]", r.MaxSkew)
	}
	return nil
}

// Check refuses occurred when it lies outside [seen-MaxAge, seen+MaxSkew],
// naming field; seen is when hookline first saw the record.
func (r TimeRule) Check(occurred, seen time.Time, field string) error {
	return provider.CheckUsageTimeWithin(occurred, seen, r.MaxAge, r.MaxSkew, field)
}
