package webhook_test

import (
	"bytes"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/hookline/hookline/pkg/webhook"
)

func ExampleVerifier_Verify() {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	secrets := []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"} // active secrets, newest first
	body := []byte(`{"id":"evt_1","type":"payment.succeeded","data":{"amount":1999}}`)

	// The provider's side: sign the body. A Lambda handler receives these
	// headers in req.Headers, lower-cased, and passes
	// webhook.HeaderMap(req.Headers).
	signed, err := webhook.SignHeaders(webhook.SchemeStandard, secrets, "msg_1", now, body)
	if err != nil {
		log.Fatal(err)
	}
	headers := webhook.HeaderMap{}
	for name := range signed {
		headers[strings.ToLower(name)] = signed.Get(name)
	}

	v, err := webhook.NewVerifier(webhook.VerifierConfig{
		Scheme: webhook.SchemeStandard,
		Now:    func() time.Time { return now },
	})
	if err != nil {
		log.Fatal(err)
	}
	got, err := v.Verify(headers, body, secrets)
	if err != nil {
		log.Fatal(err)
	}
	// got.EventID is the provider's identity for the event.
	fmt.Println(got.EventID, got.Envelope.ID, got.Envelope.Type)

	// A body changed after signing is refused. KindOf says which HTTP
	// status to answer, Reason labels the refusal for a metric.
	tampered := bytes.Replace(body, []byte("1999"), []byte("9999"), 1)
	_, err = v.Verify(headers, tampered, secrets)
	fmt.Println(webhook.KindOf(err), webhook.Reason(err))
	// Output:
	// msg_1 evt_1 payment.succeeded
	// unauthenticated bad_signature
}

func ExampleParseSources() {
	specs, err := webhook.ParseSources(`[
		{"name":"payments","scheme":"standard-webhooks","secret_env":"HOOKLINE_PAYMENTS_SECRETS","queue":"payments"},
		{"name":"stripe","scheme":"stripe","secret_env":"HOOKLINE_STRIPE_SECRETS","queue":"payments","tolerance":"300s"}
	]`)
	if err != nil {
		log.Fatal(err)
	}
	for _, sp := range specs {
		// The secrets come from sp.SecretEnv (or sp.SecretID), never from
		// the JSON.
		src, err := sp.Source(webhook.SplitSecrets("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"), "https://sqs.eu-west-1.amazonaws.com/123456789012/"+sp.Queue)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(src.Name, src.Scheme, sp.SecretEnv, src.Tolerance)
	}
	// Output:
	// payments standard-webhooks HOOKLINE_PAYMENTS_SECRETS 0s
	// stripe stripe HOOKLINE_STRIPE_SECRETS 5m0s
}
