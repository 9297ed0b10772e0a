package webhook_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	svix "github.com/svix/svix-webhooks/go"

	"github.com/hookline/hookline/pkg/webhook"
)

// svixHeaders are the headers a Svix delivery carries: Svix's names.
func svixHeaders(id string, ts time.Time, sig string) webhook.HeaderMap {
	return webhook.HeaderMap{webhook.HeaderSvixID: id, webhook.HeaderSvixTimestamp: svixTimestamp(ts), webhook.HeaderSvixSignature: sig}
}

func TestStandardTakesSvixHeaderNames(t *testing.T) {
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	body := []byte(`{"specversion":"1.0","id":"evt-1","source":"/meter","type":"tokens"}`)
	now := time.Now().Truncate(time.Second)
	wh, err := svix.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := wh.Sign("msg_svix_h1", now, body)
	if err != nil {
		t.Fatal(err)
	}
	v := presetVerifier(t, webhook.SchemeStandard, webhook.PresetOptions{}, now)
	t.Run("svix names alone", func(t *testing.T) {
		// Given a delivery signed by svix under svix-* headers, when the
		// standard-webhooks scheme verifies it, then it passes with the
		// svix-id as its identity
		d, err := v.VerifyDelivery(svixHeaders("msg_svix_h1", now, sig), body, []string{secret})
		if err != nil {
			t.Fatalf("svix-* headers refused: %v", err)
		}
		if d.Items[0].EventID != "msg_svix_h1" {
			t.Fatalf("event ID %q, want the svix-id", d.Items[0].EventID)
		}
	})
	t.Run("both names agreeing", func(t *testing.T) {
		h := svixHeaders("msg_svix_h1", now, sig)
		h[webhook.HeaderWebhookID], h[webhook.HeaderWebhookTimestamp], h[webhook.HeaderWebhookSignature] = "msg_svix_h1", svixTimestamp(now), sig
		if _, err := v.VerifyDelivery(h, body, []string{secret}); err != nil {
			t.Fatalf("agreeing headers refused: %v", err)
		}
	})
	for _, name := range []string{webhook.HeaderWebhookID, webhook.HeaderWebhookTimestamp, webhook.HeaderWebhookSignature} {
		t.Run("both names differing in "+name, func(t *testing.T) {
			// Given the svix-* headers and one webhook-* header of another
			// value, then the delivery is refused as malformed, naming both
			h := svixHeaders("msg_svix_h1", now, sig)
			h[name] = "v1,other"
			if name == webhook.HeaderWebhookTimestamp {
				h[name] = svixTimestamp(now.Add(time.Second))
			}
			_, err := v.VerifyDelivery(h, body, []string{secret})
			if !errors.Is(err, webhook.ErrMalformedHeader) {
				t.Fatalf("err = %v, want ErrMalformedHeader", err)
			}
		})
	}
	t.Run("svix verifies ours under its names", func(t *testing.T) {
		ours, err := webhook.SignHeaders(webhook.SchemeStandard, []string{secret}, "msg_svix_h2", now, body)
		if err != nil {
			t.Fatal(err)
		}
		renamed := http.Header{}
		renamed.Set(webhook.HeaderSvixID, ours.Get(webhook.HeaderWebhookID))
		renamed.Set(webhook.HeaderSvixTimestamp, ours.Get(webhook.HeaderWebhookTimestamp))
		renamed.Set(webhook.HeaderSvixSignature, ours.Get(webhook.HeaderWebhookSignature))
		if err := wh.Verify(body, renamed); err != nil {
			t.Fatalf("svix refuses our signature under its names: %v", err)
		}
	})
	t.Run("a tampered body", func(t *testing.T) {
		_, err := v.VerifyDelivery(svixHeaders("msg_svix_h1", now, sig), append(body, ' '), []string{secret})
		if !errors.Is(err, webhook.ErrBadSignature) {
			t.Fatalf("err = %v, want ErrBadSignature", err)
		}
	})
}
