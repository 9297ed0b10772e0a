package stripeusage_test

import (
	"errors"
	"testing"

	"github.com/hookline/hookline/internal/stripeusage"
	"github.com/hookline/hookline/internal/sums"
)

func TestAStripeRefusalOfOneQueryIsRefusedAndAKeyProblemIsNot(t *testing.T) {
	for status, want := range map[int]bool{404: true, 400: true, 401: false, 403: false} {
		err := error(&stripeusage.APIError{Endpoint: stripeusage.SummariesEndpoint, Status: status})
		if got := errors.Is(err, sums.ErrRefused); got != want || !errors.Is(err, sums.ErrRead) {
			t.Errorf("status %d: refused %v (want %v), read error %v", status, got, want, errors.Is(err, sums.ErrRead))
		}
	}
}
