package receiver

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/pkg/webhook"
)

// TestIntakeErrorsHaveTheirAnswers: each error the intake store types
// gets its own status, never the 500 of an error nobody mapped. A payload
// the intake refuses as too large is 413: the provider must not retry it.
func TestIntakeErrorsHaveTheirAnswers(t *testing.T) {
	tests := []struct {
		err    error
		status int
		code   string
	}{
		{intake.ErrTooLarge, http.StatusRequestEntityTooLarge, "body_too_large"},
		{intake.ErrConflict, http.StatusConflict, "event_id_conflict"},
		{intake.ErrBusy, http.StatusServiceUnavailable, "in_progress"},
		{intake.ErrUnavailable, http.StatusServiceUnavailable, "unavailable"},
	}
	for _, tt := range tests {
		got := answerFor(webhook.SchemeStandard, fmt.Errorf("event payments/evt_1: %w", tt.err))
		if got.status != tt.status || got.code != tt.code {
			t.Errorf("answer for %v: %d %s, want %d %s", tt.err, got.status, got.code, tt.status, tt.code)
		}
	}
}
