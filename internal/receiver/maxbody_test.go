package receiver_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/internal/receiver"
	"github.com/hookline/hookline/pkg/secrets"
	"github.com/hookline/hookline/pkg/webhook"
)

// A source's max_body is a promise: no body within it is refused for its
// size, since no retry could make it smaller. A preset's queue message is
// an envelope around the item, larger than the body, and an SQS message
// holds 256 KiB (on a queue that keeps SQS's earlier default), so the
// receiver bounds each scheme's max_body by what one message holds.

// messageLimit256KiB makes the fixture's payments queue take messages of
// up to 256 KiB, attributes counted, as a queue created while that was
// SQS's default does.
func messageLimit256KiB(t *testing.T, f *fixture) {
	t.Helper()
	if _, err := f.env.SQS.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(f.env.QueueURL("payments")),
		Attributes: map[string]string{"MaximumMessageSize": strconv.Itoa(256 << 10)}}); err != nil {
		t.Fatal(err)
	}
}

// sizedReceiver is a receiver with the one source spec on the payments
// queue, whose secrets are secret.
func sizedReceiver(f *fixture, spec webhook.SourceSpec, secret string) (*receiver.Handler, error) {
	spec.SecretEnv = "SIZED"
	return receiver.New(receiver.Config{Intake: f.store, MaxEventAge: 100 * 365 * 24 * time.Hour, Sources: []receiver.Source{{
		Spec: spec, QueueURL: f.env.QueueURL("payments"),
		Secrets: secrets.Env{Lookup: func(string) (string, bool) { return secret, true }},
	}}})
}

// jsonBody is a JSON body of exactly n bytes.
func jsonBody(n int) string { return `{"zen":"` + strings.Repeat("a", n-10) + `"}` }

// githubRequest is a signed GitHub delivery of body to the source.
func githubRequest(t *testing.T, source, body string) map[string]string {
	t.Helper()
	h, err := webhook.SignPreset(webhook.SchemeGitHub, "gh-secret", webhook.PresetOptions{}, "72d3162e-cc78-11e3-81ab-4c9367dc0958", time.Now(), []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{"content-type": "application/json"}
	for k := range h {
		out[strings.ToLower(k)] = h.Get(k)
	}
	return out
}

// TestAGitHubBodyWithinMaxBodyIsNotRefusedForItsSize: a GitHub source
// with max_body 401,408 (what one intake record holds) either does not
// start, or takes a body of that size: never a 413 that no retry fixes.
func TestAGitHubBodyWithinMaxBodyIsNotRefusedForItsSize(t *testing.T) {
	f := newFixture(t, nil, nil)
	messageLimit256KiB(t, f)
	// Given a GitHub source whose max_body is what one record holds
	h, err := sizedReceiver(f, webhook.SourceSpec{Name: "gh", Scheme: webhook.SchemeGitHub, MaxBody: intake.MaxPayload}, "gh-secret")
	if err != nil {
		// the limit is refused at start, saying why
		if !strings.Contains(err.Error(), "max_body") || !strings.Contains(err.Error(), "SQS") {
			t.Fatalf("refused at start without saying why: %v", err)
		}
		return
	}
	// or else a body of that size is accepted
	f.handler = h
	body := jsonBody(intake.MaxPayload)
	if resp := f.handle(t, request("gh", body, githubRequest(t, "gh", body))); resp.StatusCode != 200 {
		t.Fatalf("a %d-byte body within max_body %d: %d %s", len(body), intake.MaxPayload, resp.StatusCode, resp.Body)
	}
}

// braintreeForm is a signed Braintree form of at most n bytes, and no
// more than 16 under.
func braintreeForm(t *testing.T, secret string, n int) string {
	t.Helper()
	xml := func(pad int) []byte {
		return []byte(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<notification><kind>check</kind><timestamp type="datetime">` +
			time.Now().UTC().Format(time.RFC3339) + `</timestamp><note>` + strings.Repeat("a", pad) + `</note></notification>`)
	}
	pad := n * 3 / 4
	for {
		form, err := webhook.SignBraintree(secret, xml(pad))
		if err != nil {
			t.Fatal(err)
		}
		if len(form) <= n {
			if len(form) < n-16 {
				t.Fatalf("a %d-byte form, want %d", len(form), n)
			}
			return form
		}
		pad -= max((len(form)-n)*3/4, 1)
	}
}

// TestABodyOfTheDefaultLimitIsAccepted: with max_body left unset, a body
// of the limit is accepted and queued, on a queue whose messages hold 256
// KiB, and one byte more is refused 413: for the body as it is, for a
// preset's envelope, for Braintree's XML held as a JSON string, and for a
// body SQS takes only encoded.
func TestABodyOfTheDefaultLimitIsAccepted(t *testing.T) {
	f := newFixture(t, nil, nil)
	messageLimit256KiB(t, f)
	for _, tc := range []struct {
		scheme  webhook.Scheme
		secret  string
		request func(limit int) events.APIGatewayV2HTTPRequest
	}{
		{webhook.SchemeStandard, standardSecret, func(n int) events.APIGatewayV2HTTPRequest {
			body := jsonBody(n)
			return standardRequest(t, "msg_limit_"+strconv.Itoa(n), body, time.Now())
		}},
		{webhook.SchemeStandard, standardSecret, func(n int) events.APIGatewayV2HTTPRequest {
			body := jsonBody(n - 3)[:n-5] + "\uffff" + `"}`
			return standardRequest(t, "msg_ffff_"+strconv.Itoa(n), body, time.Now())
		}},
		{webhook.SchemeGitHub, "gh-secret", func(n int) events.APIGatewayV2HTTPRequest {
			body := jsonBody(n)
			return request("payments", body, githubRequest(t, "payments", body))
		}},
		{webhook.SchemeBraintree, "pub:private-key", func(n int) events.APIGatewayV2HTTPRequest {
			return request("payments", braintreeForm(t, "pub:private-key", n), map[string]string{"content-type": "application/x-www-form-urlencoded"})
		}},
	} {
		t.Run(string(tc.scheme), func(t *testing.T) {
			// Given a source of the scheme with max_body unset
			spec := webhook.SourceSpec{Name: "payments", Scheme: tc.scheme}
			h, err := sizedReceiver(f, spec, tc.secret)
			if err != nil {
				t.Fatal(err)
			}
			f.handler = h
			limit := int(receiver.MaxBody(spec))
			// when a body of the limit is delivered, it is accepted
			req := tc.request(limit)
			if resp := f.handle(t, req); resp.StatusCode != 200 {
				t.Fatalf("a %d-byte body, limit %d: %d %s", len(req.Body), limit, resp.StatusCode, resp.Body)
			}
			// and one a byte over is refused as too large
			req.Body += strings.Repeat(" ", limit+1-len(req.Body))
			if resp := f.handle(t, req); resp.StatusCode != 413 {
				t.Fatalf("a %d-byte body, limit %d: %d %s; want 413", len(req.Body), limit, resp.StatusCode, resp.Body)
			}
		})
	}
}
