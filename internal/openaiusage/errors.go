package openaiusage

import (
	"errors"
	"fmt"

	"github.com/hookline/hookline/internal/sums"
)

// Sentinel errors. Whatever [Reader.Sums] returns wraps [sums.ErrRead]
// as well, so a caller needs no more than that to know the window is
// unread.
var (
	ErrBadConfig   = errors.New("openaiusage: bad config")                                // a refused Config: see ConfigError
	ErrBadQuery    = errors.New("openaiusage: query refused")                             // refused before any call: see QueryError
	ErrRateLimited = errors.New("openaiusage: rate limited by OpenAI (429)")              // retried until MaxAttempts
	ErrUnavailable = errors.New("openaiusage: OpenAI unavailable")                        // a 5xx or a lost call, retried
	ErrBadPage     = errors.New("openaiusage: unreadable page")                           // an answer that cannot be read on
	ErrCurrency    = errors.New("openaiusage: cost in another currency than the meter's") // a cost the meter cannot count
)

// ConfigError is a refused field of a [Config]. It wraps [ErrBadConfig].
type ConfigError struct{ Field, Problem string }

func (e *ConfigError) Error() string {
	return fmt.Sprintf("%v: %s: %s", ErrBadConfig, e.Field, e.Problem)
}

// Unwrap is [ErrBadConfig].
func (e *ConfigError) Unwrap() error { return ErrBadConfig }

// QueryError is a refused field of a [sums.Query]. It wraps [ErrBadQuery]
// and [sums.ErrRead].
type QueryError struct{ Field, Problem string }

func (e *QueryError) Error() string {
	return fmt.Sprintf("%v: %s: %s", ErrBadQuery, e.Field, e.Problem)
}

// Unwrap is [ErrBadQuery] and [sums.ErrRead].
func (e *QueryError) Unwrap() []error { return []error{ErrBadQuery, sums.ErrRead} }

// APIError is OpenAI's refusal of a call: a 4xx other than 429, with
// what OpenAI's error body says. It is not retried, and wraps
// [sums.ErrRead].
type APIError struct {
	// Endpoint is the path called, such as /v1/organization/costs;
	// RequestID is OpenAI's x-request-id.
	Endpoint, RequestID string
	Status              int
	OpenAIError
}

// OpenAIError is the body of OpenAI's error answer, {"error": {...}}.
type OpenAIError struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Param   string `json:"param"`
	Code    string `json:"code"`
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("openaiusage: GET %s: OpenAI answered %d", e.Endpoint, e.Status)
	if e.Type != "" || e.Code != "" {
		s += fmt.Sprintf(" (%s %s)", e.Type, e.Code)
	}
	if e.Param != "" {
		s += " param " + e.Param
	}
	s += ": " + e.Message
	if e.RequestID != "" {
		s += " [" + e.RequestID + "]"
	}
	return s
}

// Unwrap is [sums.ErrRead].
func (e *APIError) Unwrap() error { return sums.ErrRead }

// Is reports a refusal of this one query ([sums.Refusal]) as
// [sums.ErrRefused], so the reconciler skips its workload and reads the
// others.
func (e *APIError) Is(target error) bool { return target == sums.ErrRefused && sums.Refusal(e.Status) }
