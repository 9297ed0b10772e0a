package webhook_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/pkg/webhook"
	"github.com/hookline/hookline/pkg/webhook/webhooktest"
)

// conformanceMaxBody is the body limit of the suite's verifiers.
const conformanceMaxBody = 8 << 10

// verifierFor builds a kit's verifier with the clock at now.
func verifierFor(t *testing.T, k webhooktest.Kit, now time.Time) *webhook.Verifier {
	t.Helper()
	v, err := webhook.NewVerifier(webhook.VerifierConfig{Scheme: k.Scheme, Options: k.Options, Certs: k.Certs,
		MaxBody: conformanceMaxBody, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatalf("NewVerifier: %v", err)
	}
	return v
}

// TestConformance runs the one suite every scheme passes: a valid
// delivery, a tampered body, a wrong key, a rotated key, a stale
// timestamp where one is signed, the same event redelivered and re-sent,
// a batch with one bad item, an oversized body and a missing header.
func TestConformance(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	for _, k := range webhooktest.Kits(t) {
		t.Run(string(k.Scheme), func(t *testing.T) {
			v := verifierFor(t, k, now)
			newest := ""
			if len(k.Secrets) > 0 {
				newest = k.Secrets[0]
			}
			verify := func(h webhook.HeaderMap, body []byte) (webhook.Delivery, error) {
				return v.VerifyDelivery(h, body, k.Secrets)
			}
			deliver := func(t *testing.T, secret, id string, at time.Time) (webhook.HeaderMap, []byte) {
				t.Helper()
				h, body, err := k.Delivery(secret, id, at)
				if err != nil {
					t.Fatalf("sign: %v", err)
				}
				return h, body
			}
			t.Run("valid delivery", func(t *testing.T) {
				// Given a delivery signed with the newest secret, when it is
				// verified, then it is one item with the provider's identity
				h, body := deliver(t, newest, "evtValid1", now)
				d, err := verify(h, body)
				if err != nil {
					t.Fatalf("VerifyDelivery: %v", err)
				}
				checkItem(t, k, d, "evtValid1", body)
			})
			t.Run("tampered body", func(t *testing.T) {
				if k.Unsigned {
					t.Skip("nothing is signed: the worker fetches the object before acting (see the mollie preset)")
				}
				h, body := deliver(t, newest, "evtTamper1", now)
				_, err := verify(h, k.Tamper(body))
				wantErr(t, err, webhook.ErrBadSignature)
			})
			t.Run("wrong key", func(t *testing.T) {
				if k.Unsigned {
					t.Skip("no key")
				}
				h, body := deliver(t, k.Wrong, "evtWrong1", now)
				_, err := verify(h, body)
				wantErr(t, err, webhook.ErrBadSignature)
			})
			t.Run("rotated key", func(t *testing.T) {
				if len(k.Secrets) < 2 {
					t.Skip("no shared secret to rotate: PayPal rotates certificates, which are fetched by URL")
				}
				// Given a delivery signed with the older of two active secrets
				h, body := deliver(t, k.Secrets[1], "evtRotated1", now)
				// Then it still verifies
				d, err := verify(h, body)
				if err != nil {
					t.Fatalf("VerifyDelivery: %v", err)
				}
				checkItem(t, k, d, "evtRotated1", body)
			})
			t.Run("stale timestamp", func(t *testing.T) {
				if !k.Stamped {
					t.Skip("the provider signs no timestamp: identity and dedupe carry the weight")
				}
				for _, skew := range []time.Duration{-10 * time.Minute, 10 * time.Minute} {
					h, body := deliver(t, newest, "evtStale1", now.Add(skew))
					_, err := verify(h, body)
					wantErr(t, err, webhook.ErrStaleTimestamp)
				}
			})
			t.Run("redelivered and re-sent", func(t *testing.T) {
				// Given one event delivered, delivered again as it was, and
				// re-sent (signed anew a minute later)
				h, body := deliver(t, newest, "evtAgain1", now)
				first, err1 := verify(h, body)
				again, err2 := verify(h, body)
				h3, body3 := deliver(t, newest, "evtAgain1", now.Add(time.Minute))
				resent, err3 := v.VerifyDelivery(h3, body3, k.Secrets)
				if err := errors.Join(err1, err2, err3); err != nil {
					t.Fatalf("VerifyDelivery: %v", err)
				}
				// Then each has the same identity, and the redelivery the same payload
				if k.Unsigned {
					if id := envelopeID(t, first); id != envelopeID(t, again) || id != envelopeID(t, resent) {
						t.Fatalf("object ids differ")
					}
					return
				}
				if first.Items[0].EventID != again.Items[0].EventID || first.Items[0].EventID != resent.Items[0].EventID {
					t.Fatalf("identities %q %q %q differ", first.Items[0].EventID, again.Items[0].EventID, resent.Items[0].EventID)
				}
				if string(first.Items[0].Payload) != string(again.Items[0].Payload) {
					t.Fatalf("a redelivery made another payload")
				}
			})
			t.Run("batch with one bad item", func(t *testing.T) {
				if !k.Batches {
					t.Skip("the provider does not batch")
				}
				// Given a batch of three in which the second is bad
				h, body, err := k.Batch(newest, []string{"evtB1", "evtB2", "evtB3"}, 1, now)
				if err != nil {
					t.Fatal(err)
				}
				// When verified, then two items survive and the bad one is refused alone
				d, err := verify(h, body)
				if err != nil {
					t.Fatalf("VerifyDelivery: %v", err)
				}
				if len(d.Items) != 2 || len(d.Refused) != 1 || d.Refused[0].Index != 1 {
					t.Fatalf("items %d, refused %+v; want 2 and index 1", len(d.Items), d.Refused)
				}
				if d.Items[0].EventID != k.WantID("evtB1") || d.Items[1].EventID != k.WantID("evtB3") {
					t.Fatalf("identities %q %q", d.Items[0].EventID, d.Items[1].EventID)
				}
				if webhook.KindOf(d.Refused[0].Err) == webhook.KindNone {
					t.Fatalf("refusal has no kind")
				}
			})
			t.Run("oversized body", func(t *testing.T) {
				h, body := deliver(t, newest, "evtBig1", now)
				big := append(body, []byte(strings.Repeat(" ", conformanceMaxBody))...)
				_, err := verify(h, big)
				wantErr(t, err, webhook.ErrBodyTooLarge)
			})
			t.Run("missing header", func(t *testing.T) {
				if k.Unsigned {
					t.Skip("no signature header")
				}
				h, body := k.Strip(deliver(t, newest, "evtBare1", now))
				_, err := verify(h, body)
				if webhook.KindOf(err) != webhook.KindUnauthenticated || !errors.Is(err, webhook.ErrMissingSignature) && !errors.Is(err, webhook.ErrBadSignature) {
					t.Fatalf("err = %v (kind %s), want a missing signature (unauthenticated)", err, webhook.KindOf(err))
				}
			})
		})
	}
}

// checkItem checks a delivery of one event: its identity and its queue
// message.
func checkItem(t *testing.T, k webhooktest.Kit, d webhook.Delivery, id string, body []byte) {
	t.Helper()
	if len(d.Items) != 1 || len(d.Refused) != 0 {
		t.Fatalf("items %d, refused %v; want one item", len(d.Items), d.Refused)
	}
	it := d.Items[0]
	if k.RawPayload {
		if string(it.Payload) != string(body) {
			t.Fatalf("payload is not the body")
		}
		return
	}
	var env webhook.ItemEnvelope
	if err := json.Unmarshal(it.Payload, &env); err != nil {
		t.Fatalf("payload is not an envelope: %v\n%s", err, it.Payload)
	}
	if env.Provider != string(k.Scheme) || !json.Valid(env.Item) {
		t.Fatalf("envelope %+v", env)
	}
	if k.Unsigned {
		if env.ID != k.WantID(id) || !env.Fetch || !it.Untrusted || !strings.HasPrefix(it.EventID, env.ID+"@") {
			t.Fatalf("untrusted item %+v, envelope %+v", it, env)
		}
		return
	}
	if it.EventID != k.WantID(id) || env.ID != it.EventID {
		t.Fatalf("event id %q, envelope id %q, want %q", it.EventID, env.ID, k.WantID(id))
	}
}

func envelopeID(t *testing.T, d webhook.Delivery) string {
	t.Helper()
	var env webhook.ItemEnvelope
	if err := json.Unmarshal(d.Items[0].Payload, &env); err != nil {
		t.Fatal(err)
	}
	return env.ID
}

func wantErr(t *testing.T, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("err = %v, want %v", err, want)
	}
}
