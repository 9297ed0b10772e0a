package receiver

import (
	"cmp"
	"context"
	"errors"
	"net/http"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookline/hookline/pkg/emf"
	"github.com/hookline/hookline/pkg/intake"
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
}

// answerFor maps every error to its status code and public code, in one
// place. The code is all a caller ever sees.
func answerFor(err error) answer {
	switch {
	case errors.Is(err, errUnknownSource):
		return answer{http.StatusNotFound, "unknown_source", ""}
	case errors.Is(err, errMethod):
		return answer{http.StatusMethodNotAllowed, "method_not_allowed", ""}
	case errors.Is(err, intake.ErrConflict):
		return answer{http.StatusConflict, "event_id_conflict", ""}
	case errors.Is(err, intake.ErrBusy):
		return answer{http.StatusServiceUnavailable, "in_progress", "1"}
	case errors.Is(err, intake.ErrUnavailable), errors.Is(err, errUnavailable):
		return answer{http.StatusServiceUnavailable, "unavailable", "5"}
	}
	switch webhook.KindOf(err) {
	case webhook.KindUnauthenticated:
		return answer{http.StatusUnauthorized, webhook.Reason(err), ""}
	case webhook.KindInvalid:
		return answer{http.StatusBadRequest, webhook.Reason(err), ""}
	case webhook.KindTooLarge:
		return answer{http.StatusRequestEntityTooLarge, "body_too_large", ""}
	}
	return answer{http.StatusInternalServerError, "internal", ""}
}

// reject answers an error, logs its reason (never a secret or payload) and
// counts it.
func (h *Handler) reject(ctx context.Context, source string, err error) events.APIGatewayV2HTTPResponse {
	a := answerFor(err)
	level, metric := "rejected", MetricRejected
	switch {
	case a.status == http.StatusConflict:
		level, metric = "conflict", MetricConflict
	case a.status >= 500:
		level, metric = "failed", MetricFailed
	}
	h.metrics.Count(metric, 1, emf.Dims{"Source": cmp.Or(source, UnknownSource), "Reason": a.code})
	attrs := []any{"source", source, "status", a.status, "reason", a.code, "request_id", lambdaRequestID(ctx)}
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
	return jsonResponse(a.status, `{"error":"`+a.code+`"}`, headers)
}

func jsonResponse(status int, body string, headers map[string]string) events.APIGatewayV2HTTPResponse {
	h := map[string]string{"Content-Type": "application/json"}
	for k, v := range headers {
		h[k] = v
	}
	return events.APIGatewayV2HTTPResponse{StatusCode: status, Body: body, Headers: h}
}
