package stack

import (
	"fmt"
	"time"

	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/pkg/idempotency"
)

// Variables the functions read their retentions from.
const (
	IntakeRetentionVar      = "INTAKE_RETENTION"
	IdempotencyRetentionVar = "IDEMPOTENCY_RETENTION"
)

// Retentions is how long the template's functions keep intake records and
// idempotency keys.
type Retentions struct {
	// Intake is the longest INTAKE_RETENTION any function is given.
	Intake time.Duration
	// Idempotency is the shortest IDEMPOTENCY_RETENTION any function is
	// given.
	Idempotency time.Duration
}

// Retentions reads INTAKE_RETENTION and IDEMPOTENCY_RETENTION from every
// function's environment, a literal or a parameter's default, and falls
// back to [intake.DefaultRetention] and [idempotency.DefaultRetention]
// where no function sets one. A value that is not a positive duration is
// an error.
func (t *Template) Retentions() (Retentions, error) {
	r := Retentions{}
	for _, fn := range t.Functions {
		in, ok, err := t.envDuration(fn, IntakeRetentionVar)
		if err != nil {
			return Retentions{}, err
		}
		if ok && in > r.Intake {
			r.Intake = in
		}
		idem, ok, err := t.envDuration(fn, IdempotencyRetentionVar)
		if err != nil {
			return Retentions{}, err
		}
		if ok && (r.Idempotency == 0 || idem < r.Idempotency) {
			r.Idempotency = idem
		}
	}
	if r.Intake == 0 {
		r.Intake = intake.DefaultRetention
	}
	if r.Idempotency == 0 {
		r.Idempotency = idempotency.DefaultRetention
	}
	return r, nil
}

// envDuration reads one duration variable of fn; ok is false when fn does
// not set it.
func (t *Template) envDuration(fn Function, name string) (time.Duration, bool, error) {
	v, ok := fn.Environment[name]
	if !ok {
		return 0, false, nil
	}
	if LogicalID(v) != v {
		if v, ok = t.ParameterDefault(v); !ok {
			return 0, false, fmt.Errorf("%s: %s names a parameter without a default: %w", fn.LogicalID, name, ErrBadRetention)
		}
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, false, fmt.Errorf("%s: %s=%q is not a positive duration: %w", fn.LogicalID, name, v, ErrBadRetention)
	}
	return d, true, nil
}

// CheckRetention reports a template whose intake records outlive its
// idempotency keys: replaying a record whose key has expired would claim
// the event afresh and charge it again. It also reports a retention that
// cannot be read.
func CheckRetention(t *Template) []error {
	r, err := t.Retentions()
	if err != nil {
		return []error{err}
	}
	if r.Intake > r.Idempotency {
		return []error{fmt.Errorf("%s: %s %s > %s %s: %w", t.retentionOwner(), IntakeRetentionVar, r.Intake,
			IdempotencyRetentionVar, r.Idempotency, ErrIntakeOutlivesIdempotency)}
	}
	return nil
}

// retentionOwner names the function that keeps intake records longest.
func (t *Template) retentionOwner() string {
	owner, longest := "", time.Duration(0)
	for _, fn := range t.Functions {
		if d, ok, _ := t.envDuration(fn, IntakeRetentionVar); ok && d > longest {
			owner, longest = fn.LogicalID, d
		}
	}
	return owner
}
