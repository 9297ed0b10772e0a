package config

import (
	"fmt"
	"time"
)

// eventAgeMargin is how far below the intake retention the default
// MAX_EVENT_AGE stays: room for the provider's clock and ours.
const eventAgeMargin = 24 * time.Hour

// maxEventAgeFromEnv reads MAX_EVENT_AGE, the age past which the
// receiver acknowledges and drops an event whose time is signed but held
// to no replay window: by default the intake retention less a day. One
// that is not below the retention is refused, since a replay whose
// intake record has expired would then be accepted; so is a retention
// of a day or less without one.
func maxEventAgeFromEnv(e *env, retention time.Duration) time.Duration {
	if v, _ := e.lookup("MAX_EVENT_AGE"); v == "" {
		if retention <= eventAgeMargin {
			e.errs = append(e.errs, fmt.Errorf("config: INTAKE_RETENTION %s leaves no day for the default MAX_EVENT_AGE: set MAX_EVENT_AGE below INTAKE_RETENTION %s", retention, retention))
			return 0
		}
		return retention - eventAgeMargin
	}
	age := e.duration("MAX_EVENT_AGE", retention-eventAgeMargin)
	if age >= retention {
		e.errs = append(e.errs, fmt.Errorf("config: MAX_EVENT_AGE %s must be below INTAKE_RETENTION %s: a replay the intake no longer remembers would be accepted", age, retention))
	}
	return age
}
