package spend

import (
	"fmt"
	"regexp"
	"strconv"
)

// WorkloadIDPattern is the alphabet and length of a workload ID: 1 to 63
// characters, lower-case letters, digits, '.', '_' and '-', starting with
// a letter or a digit. Such an ID is one URL path segment with nothing to
// escape (the admission route is /workloads/{id}/admission), a DynamoDB key
// with room to spare, and a log field with no space, quote or control
// character to forge a line. Lower case only, so two IDs never differ only
// in case.
const WorkloadIDPattern = `^[a-z0-9][a-z0-9._-]{0,62}$`

// MaxWorkloadIDLen is the longest workload ID.
const MaxWorkloadIDLen = 63

var workloadIDRE = regexp.MustCompile(WorkloadIDPattern)

// InvalidIDError is a workload ID outside [WorkloadIDPattern].
type InvalidIDError struct {
	ID     string
	Reason string
}

func (e *InvalidIDError) Error() string {
	id := e.ID
	if len(id) > 80 {
		id = id[:80] + "..."
	}
	return fmt.Sprintf("spend: invalid workload ID %s: %s", strconv.Quote(id), e.Reason)
}

// Unwrap makes an *InvalidIDError match [ErrInvalidWorkloadID] and
// [ErrInvalidWorkload].
func (e *InvalidIDError) Unwrap() []error { return []error{ErrInvalidWorkloadID, ErrInvalidWorkload} }

// ValidWorkloadID reports, as an [*InvalidIDError], why id is not a
// workload ID a new workload may take; nil when it is one.
func ValidWorkloadID(id string) error {
	switch {
	case id == "":
		return &InvalidIDError{ID: id, Reason: "empty"}
	case len(id) > MaxWorkloadIDLen:
		return &InvalidIDError{ID: id, Reason: fmt.Sprintf("%d characters, at most %d", len(id), MaxWorkloadIDLen)}
	case !workloadIDRE.MatchString(id):
		return &InvalidIDError{ID: id, Reason: "use lower-case letters, digits, '.', '_' and '-', starting with a letter or digit"}
	}
	return nil
}
