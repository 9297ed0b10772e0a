package receiver_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"regexp"
	"testing"

	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/pkg/webhook"
)

// TestABraintreeEventRecordedInTheEarlierFormIsADuplicate: builds before
// held Braintree's XML in the message with encoding/json's HTML escaping
// (< as \u003c); this one holds it as it is. A retry, after the deploy,
// of a notification the build before recorded is the same event: a
// duplicate, sent again from its record if need be, never a conflict.
func TestABraintreeEventRecordedInTheEarlierFormIsADuplicate(t *testing.T) {
	f := newFixture(t, nil, nil)
	h, err := sizedReceiver(f, webhook.SourceSpec{Name: "payments", Scheme: webhook.SchemeBraintree}, "pub:private-key")
	if err != nil {
		t.Fatal(err)
	}
	f.handler = h
	// Given a notification the build before recorded, in its form
	form := braintreeForm(t, "pub:private-key", 2048)
	values, _ := url.ParseQuery(form)
	xml, err := base64.StdEncoding.DecodeString(values.Get("bt_payload"))
	if err != nil {
		t.Fatal(err)
	}
	id := "check:-:" + regexp.MustCompile(`<timestamp type="datetime">([^<]+)<`).FindStringSubmatch(string(xml))[1]
	item, _ := json.Marshal(string(xml))
	earlier := `{"provider":"braintree","id":"` + id + `","type":"check","item":` + string(item) + `}`
	if _, err := f.store.Accept(context.Background(), intake.Event{Source: "payments", EventID: id, QueueURL: f.env.QueueURL("payments"),
		Payload: []byte(earlier)}); err != nil {
		t.Fatal(err)
	}
	// when Braintree sends it again to this build
	resp := f.handle(t, request("payments", form, map[string]string{"content-type": "application/x-www-form-urlencoded"}))
	// then it is a duplicate
	if resp.StatusCode != 200 || resp.Body != `{"status":"duplicate"}` {
		t.Fatalf("got %d %s; want 200 duplicate", resp.StatusCode, resp.Body)
	}
}
