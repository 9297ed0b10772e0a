package stripeusage

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hookline/hookline/internal/sums"
)

// Errors of the package. Every error of [Reader.Sums] also wraps
// [sums.ErrRead].
var (
	// ErrBadConfig means a [Config] is refused (see [FieldError]).
	ErrBadConfig = errors.New("stripeusage: bad config")
	// ErrBadQuery means a [sums.Query] Stripe would refuse, refused before
	// any call (see [FieldError]).
	ErrBadQuery = errors.New("stripeusage: query refused")
	// ErrRateLimited is Stripe's 429: retried, and wrapped once
	// [Config.MaxAttempts] calls have failed.
	ErrRateLimited = errors.New("stripeusage: rate limited by Stripe (429)")
	// ErrUnavailable is a 5xx or a network failure: retried like a 429.
	ErrUnavailable = errors.New("stripeusage: Stripe unavailable")
	// ErrLivemode means a summary's livemode is not its source's.
	ErrLivemode = errors.New("stripeusage: summary livemode differs from the source's")
	// ErrBadPage means a page Stripe answered cannot be read on.
	ErrBadPage = errors.New("stripeusage: unreadable page")
	// ErrNotAlert means an event is of another type than
	// billing.alert.triggered.
	ErrNotAlert = errors.New("stripeusage: not a billing.alert.triggered event")
	// ErrBadAlert means a billing.alert.triggered event is refused (see
	// [FieldError]).
	ErrBadAlert = errors.New("stripeusage: bad billing.alert.triggered event")
)

// FieldError is a refused field: of a [Config] (wrapping [ErrBadConfig]),
// of a [sums.Query] (wrapping [ErrBadQuery] and [sums.ErrRead]) or of a
// billing.alert.triggered event (wrapping [ErrBadAlert]; Field is then
// the field's JSON path, such as "data.object.value").
type FieldError struct {
	Field, Problem string
	kind           []error
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("%v: %s: %s", e.kind[0], e.Field, e.Problem)
}

// Unwrap is the sentinels of the error's kind.
func (e *FieldError) Unwrap() []error { return e.kind }

var (
	configKind = []error{ErrBadConfig}
	queryKind  = []error{ErrBadQuery, sums.ErrRead}
	alertKind  = []error{ErrBadAlert}
)

func configError(field, problem string) *FieldError {
	return &FieldError{Field: field, Problem: problem, kind: configKind}
}

func alertError(field, problem string) *FieldError {
	return &FieldError{Field: field, Problem: problem, kind: alertKind}
}

// APIError is Stripe's refusal of a call: a 4xx other than 429, with the
// type, code and message of Stripe's error body. It is not retried, and
// wraps [sums.ErrRead].
type APIError struct {
	// Endpoint is the path template called, such as [SummariesEndpoint].
	Endpoint  string
	Status    int
	Type      string
	Code      string
	Param     string
	Message   string
	RequestID string
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "stripeusage: GET %s: Stripe answered %d", e.Endpoint, e.Status)
	for _, s := range []string{e.Type, e.Code} {
		if s != "" {
			b.WriteString(" " + s)
		}
	}
	if e.Param != "" {
		fmt.Fprintf(&b, " (param %s)", e.Param)
	}
	fmt.Fprintf(&b, ": %s", e.Message)
	if e.RequestID != "" {
		fmt.Fprintf(&b, " [%s]", e.RequestID)
	}
	return b.String()
}

// Unwrap is [sums.ErrRead].
func (e *APIError) Unwrap() error { return sums.ErrRead }

// Is reports a refusal of this one query ([sums.Refusal]) as
// [sums.ErrRefused], so the reconciler skips its workload and reads the
// others.
func (e *APIError) Is(target error) bool { return target == sums.ErrRefused && sums.Refusal(e.Status) }
