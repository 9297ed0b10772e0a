package receiver_test

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/pkg/webhook"
)

// idHeaders are the presets whose provider names the event only in a
// header that no signature covers, and that header.
var idHeaders = map[webhook.Scheme]string{
	webhook.SchemeGitHub:   webhook.HeaderGitHubDelivery,
	webhook.SchemeShopify:  webhook.HeaderShopifyEventID,
	webhook.SchemeRazorpay: webhook.HeaderRazorpayEventID,
}

// TestASignedBodyUnderANewIDHeaderIsADuplicate: the body and signature
// of an accepted GitHub, Shopify or Razorpay delivery, sent again under
// another ID header (or the first one joined with another, as API
// Gateway joins a repeated header), is the same event: a duplicate,
// sent again only as a redelivery is, under the first identity, and
// never a new event on the queue.
func TestASignedBodyUnderANewIDHeaderIsADuplicate(t *testing.T) {
	t.Parallel()
	pf := newPresetFixture(t)
	for scheme, idHeader := range idHeaders {
		source := "src-" + string(scheme)
		k := pf.kits[source]
		t.Run(string(scheme), func(t *testing.T) {
			// Given a delivery accepted under its ID header
			h, body, err := k.Delivery(k.Secrets[0], "evtResent1", time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if res := pf.send(t, source, h, body); res.StatusCode != 200 || res.Body != `{"status":"accepted"}` {
				t.Fatalf("first: %d %s, want accepted", res.StatusCode, res.Body)
			}
			// When the same body and signature come under other IDs
			for _, id := range []string{"evtForged1", "evtResent1, evtForged2", "evtResent1,evtForged3"} {
				forged := maps.Clone(h)
				forged[idHeader] = id
				res := pf.send(t, source, forged, body)
				// Then each is a duplicate
				if res.StatusCode != 200 || res.Body != `{"status":"duplicate"}` {
					t.Fatalf("under ID header %q: %d %s, want 200 duplicate", id, res.StatusCode, res.Body)
				}
			}
			// and every message on the queue is the one event, under its
			// first identity and payload, which one record holds.
			want := k.WantID("evtResent1")
			msgs := pf.drain(t, "payments")
			for _, m := range msgs {
				if got := aws.ToString(m.MessageAttributes["event_id"].StringValue); got != want || aws.ToString(m.Body) != aws.ToString(msgs[0].Body) {
					t.Fatalf("queue message of event %q (%s), want only %q with one payload", got, aws.ToString(m.Body), want)
				}
			}
			if _, ok, err := pf.store.Get(context.Background(), source, want); !ok || err != nil {
				t.Fatalf("no intake record under %q: %v", want, err)
			}
		})
	}
}

// TestARetryOfAPresetDeliveryAcceptedBeforeTheDigestIsADuplicate: an
// event the build before accepted under its ID header is, when the
// provider retries it after the deploy, a duplicate of that record: no
// record under the digest, and no message under it.
func TestARetryOfAPresetDeliveryAcceptedBeforeTheDigestIsADuplicate(t *testing.T) {
	t.Parallel()
	pf := newPresetFixture(t)
	source := "src-" + string(webhook.SchemeGitHub)
	k := pf.kits[source]
	const headerID = "72d3162e-cc78-11e3-81ab-4c9367dc0958"
	h, body, err := k.Delivery(k.Secrets[0], headerID, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	// Given the record the build before wrote: keyed by the header's ID,
	// its payload the envelope it built with that ID
	before := intake.Event{Source: source, EventID: headerID, QueueURL: pf.env.QueueURL("payments"),
		Payload: []byte(`{"provider":"github","id":"` + headerID + `","type":"ping","item":` + string(body) + `}`)}
	if res, err := pf.store.Accept(context.Background(), before); err != nil || res.Outcome != intake.Accepted {
		t.Fatalf("the build before: %+v, %v", res, err)
	}
	pf.drain(t, "payments")
	// When GitHub redelivers it after the deploy
	res := pf.send(t, source, h, body)
	// Then it is a duplicate of that record, and no message or record
	// carries the new identity
	if res.StatusCode != 200 || res.Body != `{"status":"duplicate"}` {
		t.Fatalf("retry after the deploy: %d %s, want 200 duplicate", res.StatusCode, res.Body)
	}
	for _, m := range pf.drain(t, "payments") {
		if got := aws.ToString(m.MessageAttributes["event_id"].StringValue); got != headerID {
			t.Fatalf("queue message of event %q, want only the old record's %q", got, headerID)
		}
	}
	if _, ok, err := pf.store.Get(context.Background(), source, k.WantID(headerID)); ok || err != nil {
		t.Fatalf("a record under the digest: found %v, %v", ok, err)
	}
}
