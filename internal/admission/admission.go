package admission

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookline/hookline/internal/spend"
)

// Checker is the part of [spend.Spend] admission needs.
type Checker interface {
	Admission(ctx context.Context, id string) (spend.Admission, error)
}

// Handler answers admission requests.
type Handler struct {
	checker Checker
	log     *slog.Logger
}

// New builds a Handler.
func New(c Checker, log *slog.Logger) (*Handler, error) {
	if c == nil {
		return nil, errors.New("admission: a checker is required")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Handler{checker: c, log: log}, nil
}

// maxLookupID bounds the IDs looked up at all: no workload ID, legacy ones
// included, is longer, and DynamoDB refuses a key past 2,048 bytes.
const maxLookupID = 2000

type answer struct {
	Allowed    bool   `json:"allowed"`
	Reason     string `json:"reason,omitempty"`
	Status     string `json:"status"`
	Attributed int64  `json:"attributed"`
	Cap        int64  `json:"cap"`
	// Period and PeriodEnd are the current billing period, whose total
	// Attributed is, and its end; absent for a lifetime total.
	Period    string `json:"period,omitempty"`
	PeriodEnd string `json:"period_end,omitempty"`
}

// Handle is the Lambda entry point.
func (h *Handler) Handle(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	if req.RequestContext.HTTP.Method != http.MethodGet {
		return respond(http.StatusMethodNotAllowed, map[string]string{"error": "method_not_allowed"}), nil
	}
	id := req.PathParameters["id"]
	if len(id) > maxLookupID {
		return respond(http.StatusBadRequest, map[string]string{"error": "invalid_workload_id"}), nil
	}
	a, err := h.checker.Admission(ctx, id)
	switch {
	case errors.Is(err, spend.ErrUnknownWorkload), errors.Is(err, spend.ErrInvalidWorkload), errors.Is(err, spend.ErrNotFound):
		// A workload created before IDs had an alphabet is still answered
		// above; an unknown ID outside it is a malformed request.
		if spend.ValidWorkloadID(id) != nil {
			return respond(http.StatusBadRequest, map[string]string{"error": "invalid_workload_id"}), nil
		}
		return respond(http.StatusNotFound, map[string]string{"error": "unknown_workload"}), nil
	case err != nil:
		h.log.ErrorContext(ctx, "admission check failed", "workload", id, "err", err)
		resp := respond(http.StatusServiceUnavailable, map[string]string{"error": "unavailable"})
		resp.Headers["Retry-After"] = "1"
		return resp, nil
	}
	body := answer{Allowed: a.Allowed, Reason: a.Reason, Status: a.Status, Attributed: a.Attributed, Cap: a.Cap, Period: a.Period}
	if !a.PeriodEnd.IsZero() {
		body.PeriodEnd = a.PeriodEnd.UTC().Format(time.RFC3339)
	}
	status := http.StatusOK
	if !a.Allowed {
		status = http.StatusLocked
	}
	return respond(status, body), nil
}

func respond(status int, body any) events.APIGatewayV2HTTPResponse {
	b, _ := json.Marshal(body)
	return events.APIGatewayV2HTTPResponse{StatusCode: status, Body: string(b), Headers: map[string]string{"Content-Type": "application/json"}}
}
