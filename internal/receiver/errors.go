package receiver

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookline/hookline/internal/emf"
	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/pkg/provider"
	"github.com/hookline/hookline/pkg/webhook"
)

// Errors of the receiver itself; verification errors come from
// [webhook] and storage errors from [intake].
var (
	errUnknownSource = errors.New("receiver: unknown source")
	errMethod        = errors.New("receiver: method not allowed")
	errUnavailable   = errors.New("receiver: dependency unavailable")
)

// answer is how one class of error is told to the caller.
type answer struct {
	status     int
	code       string
	retryAfter string
	// field and reason say which member of a verified body was refused and
	// why; they name the caller's own data, never ours.
	field, reason string
}

// answerFor maps every error to its status code and public code, in one
// place, for a source of scheme. The code is all a caller ever sees.
func answerFor(scheme webhook.Scheme, err error) answer {
	switch {
	case errors.Is(err, errUnknownSource):
		return answer{status: http.StatusNotFound, code: "unknown_source"}
	case errors.Is(err, errMethod):
		return answer{status: http.StatusMethodNotAllowed, code: "method_not_allowed"}
	case errors.Is(err, intake.ErrConflict):
		return answer{status: http.StatusConflict, code: "event_id_conflict"}
	case errors.Is(err, intake.ErrTooLarge):
		return answer{status: http.StatusRequestEntityTooLarge, code: "body_too_large"}
	case errors.Is(err, intake.ErrBusy):
		return answer{status: http.StatusServiceUnavailable, code: "in_progress", retryAfter: "1"}
	case errors.Is(err, intake.ErrUnavailable), errors.Is(err, errUnavailable):
		return answer{status: http.StatusServiceUnavailable, code: "unavailable", retryAfter: "5"}
	}
	if fe, ok := provider.AsFieldError(err); ok {
		return answer{status: http.StatusBadRequest, code: "invalid_usage", field: clip(fe.Field), reason: clip(fe.Reason)}
	}
	var we *webhook.FieldError
	if errors.As(err, &we) {
		return answer{status: http.StatusBadRequest, code: webhook.Reason(err), field: clip(we.Field), reason: clip(we.Reason)}
	}
	switch webhook.KindOf(err) {
	case webhook.KindUnauthenticated:
		if scheme == webhook.SchemeGoCardless {
			// GoCardless asks for 498 Token Invalid on a bad signature.
			return answer{status: webhook.StatusTokenInvalid, code: webhook.Reason(err)}
		}
		return answer{status: http.StatusUnauthorized, code: webhook.Reason(err)}
	case webhook.KindUnavailable:
		return answer{status: http.StatusServiceUnavailable, code: webhook.Reason(err), retryAfter: "5"}
	case webhook.KindInvalid:
		return answer{status: http.StatusBadRequest, code: webhook.Reason(err)}
	case webhook.KindTooLarge:
		return answer{status: http.StatusRequestEntityTooLarge, code: "body_too_large"}
	}
	return answer{status: http.StatusInternalServerError, code: "internal"}
}

// maxDetail bounds the field and reason an answer echoes: a field path
// is built from the caller's member names, which may be long.
const maxDetail = 128

// clip returns at most maxDetail bytes of s, cut on a rune boundary.
func clip(s string) string {
	if len(s) <= maxDetail {
		return s
	}
	return strings.ToValidUTF8(s[:maxDetail], "") + "..."
}

// reject answers an error, logs its reason (never a secret or payload) and
// counts it.
func (h *Handler) reject(ctx context.Context, source string, err error) events.APIGatewayV2HTTPResponse {
	a := answerFor(h.sources[source].spec.Scheme, err)
	level, metric := "rejected", MetricRejected
	switch {
	case a.status == http.StatusConflict:
		level, metric = "conflict", MetricConflict
	case a.status >= 500:
		level, metric = "failed", MetricFailed
	}
	h.metrics.Count(metric, 1, emf.Dims{"Source": cmp.Or(source, UnknownSource), "Reason": a.code})
	attrs := []any{"source", source, "status", a.status, "reason", a.code, "request_id", lambdaRequestID(ctx)}
	if a.field != "" || a.reason != "" {
		attrs = append(attrs, "field", a.field, "why", a.reason)
	}
	if a.status >= 500 {
		h.log.ErrorContext(ctx, "webhook "+level, append(attrs, "err", err)...)
	} else {
		h.log.WarnContext(ctx, "webhook "+level, attrs...)
	}
	var headers map[string]string
	if a.retryAfter != "" {
		headers = map[string]string{"Retry-After": a.retryAfter}
	}
	if a.status == http.StatusMethodNotAllowed {
		headers = map[string]string{"Allow": http.MethodPost}
	}
	return jsonResponse(a.status, a.body(), headers)
}

// body is the JSON body of an answer: the code, and the field and reason
// when a member of the body was refused.
func (a answer) body() string {
	if a.field == "" && a.reason == "" {
		return `{"error":"` + a.code + `"}`
	}
	b, err := json.Marshal(struct {
		Error  string `json:"error"`
		Field  string `json:"field"`
		Reason string `json:"reason"`
	}{a.code, a.field, a.reason})
	if err != nil {
		return `{"error":"` + a.code + `"}`
	}
	return string(b)
}

func jsonResponse(status int, body string, headers map[string]string) events.APIGatewayV2HTTPResponse {
	h := map[string]string{"Content-Type": "application/json"}
	for k, v := range headers {
		h[k] = v
	}
	return events.APIGatewayV2HTTPResponse{StatusCode: status, Body: body, Headers: h}
}
