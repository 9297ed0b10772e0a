package spend

import (
	"errors"
	"testing"
	"time"
)

func TestValidateRefusesZeroAndNegativeUnits(t *testing.T) {
	for _, units := range []int64{0, -1} {
		// Given a record of no or negative units on either path
		for _, path := range []string{PathWebhook, PathPoll} {
			u := Usage{RecordID: "ur_1", WorkloadRef: "w1", Units: units, OccurredAt: time.Now(), Path: path}
			// When the ledger checks it, then it is refused for good
			if err := u.validate(); !errors.Is(err, ErrInvalidUsage) || !IsRefused(err) {
				t.Fatalf("units %d on %s: err = %v, want ErrInvalidUsage", units, path, err)
			}
		}
	}
}
