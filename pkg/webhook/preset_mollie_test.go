package webhook_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/pkg/webhook"
)

// TestMollieAcceptsOnlyPaymentIDs: the payment worker fetches Mollie
// payments (tr_...) only, so a ping for an order, a subscription, a
// customer or anything else would be accepted, queued and never acted
// on. The door refuses it with 400, naming the field; a payment ID of
// the worker's shape is accepted, whether Mollie knows it or not (the
// worker finds out).
func TestMollieAcceptsOnlyPaymentIDs(t *testing.T) {
	now := time.Date(2026, 10, 5, 12, 0, 0, 0, time.UTC)
	v, err := webhook.NewVerifier(webhook.VerifierConfig{Scheme: webhook.SchemeMollie, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	h := webhook.HeaderMap{"content-type": "application/x-www-form-urlencoded"}
	for _, id := range []string{"tr_madeup0001", "tr_WDqYK6vllg", "tr_" + strings.Repeat("a", 64)} {
		d, err := v.VerifyDelivery(h, []byte("id="+id), nil)
		if err != nil {
			t.Errorf("id=%s: %v", id, err)
			continue
		}
		if it := d.Items[0]; !it.Untrusted || !strings.HasPrefix(it.EventID, id+"@") {
			t.Errorf("id=%s: item %q untrusted %v", id, it.EventID, it.Untrusted)
		}
	}
	for _, id := range []string{"ord_madeup0001", "sub_madeup0001", "cst_madeup0001", "re_madeup0001", "chb_madeup0001",
		"tr_" + strings.Repeat("a", 65), "tr_", "TR_madeup0001", "tr_made-up"} {
		_, err := v.VerifyDelivery(h, []byte("id="+id), nil)
		var fe *webhook.FieldError
		if !errors.As(err, &fe) || fe.Field != "id" || webhook.KindOf(err) != webhook.KindInvalid {
			t.Errorf("id=%s: err = %v (kind %s), want a FieldError on id, 400", id, err, webhook.KindOf(err))
		}
	}
}
