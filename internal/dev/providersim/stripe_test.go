package providersim_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/hookline/hookline/internal/dev/providersim"
)

// intentForm is a confirmed off-session PaymentIntent on the customer's
// default payment method, as the Stripe adapter creates one.
func intentForm(customer, amount string) url.Values {
	return url.Values{"amount": {amount}, "currency": {"usd"}, "customer": {customer},
		"payment_method": {providersim.DefaultPaymentMethod}, "confirm": {"true"}, "off_session": {"true"},
		"metadata[hookline_key]": {"k-" + customer}, "metadata[event_id]": {"evt-" + customer}}
}

func postIntent(t *testing.T, sim *providersim.Sim, key string, form url.Values) (int, http.Header, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, sim.URL()+"/v1/payment_intents", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Idempotency-Key", key)
	return do(t, req)
}

func do(t *testing.T, req *http.Request) (int, http.Header, map[string]any) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var body map[string]any
	_ = json.Unmarshal(data, &body)
	return resp.StatusCode, resp.Header, body
}

func errorCode(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

// TestStripeFaceRefusesWhatStripeRefuses: the simulator's PaymentIntents
// face checks what the adapter must send, and charges nothing when the
// request is wrong.
func TestStripeFaceRefusesWhatStripeRefuses(t *testing.T) {
	sim := start(t, providersim.Config{Profile: providersim.ProfileHonoursKeys})
	tests := []struct {
		name     string
		edit     func(url.Values)
		wantCode string
	}{
		{name: "no payment method", edit: func(f url.Values) { f.Del("payment_method") }, wantCode: "parameter_missing"},
		{name: "not the customer's payment method", edit: func(f url.Values) { f.Set("payment_method", "pm_other") }, wantCode: "resource_missing"},
		{name: "not confirmed", edit: func(f url.Values) { f.Set("confirm", "false") }, wantCode: "parameter_invalid"},
		{name: "on session", edit: func(f url.Values) { f.Del("off_session") }, wantCode: "parameter_invalid"},
		{name: "amount not an integer", edit: func(f url.Values) { f.Set("amount", "12.5") }, wantCode: "parameter_invalid_integer"},
		{name: "no currency", edit: func(f url.Values) { f.Del("currency") }, wantCode: "parameter_missing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			form := intentForm("cus_1", "1000")
			tc.edit(form)
			status, _, body := postIntent(t, sim, "k-"+tc.name, form)
			if status != http.StatusBadRequest || errorCode(body) != tc.wantCode {
				t.Fatalf("%d %v, want 400 %s", status, body, tc.wantCode)
			}
		})
	}
	if n := sim.Charges.TotalCharges(); n != 0 {
		t.Fatalf("%d charges made by refused requests", n)
	}
}

// TestStripeFaceReplaysAndSearches: a key's first answer is replayed,
// even a 503; the same key with other parameters is an idempotency_error;
// search finds an intent by its metadata only.
func TestStripeFaceReplaysAndSearches(t *testing.T) {
	sim := start(t, providersim.Config{Profile: providersim.ProfileHonoursKeys})
	sim.Faults.InjectFaults(1, providersim.Fault{Kind: providersim.FaultServerError, Status: 503})
	form := intentForm("cus_2", "1000")
	for i := range 2 {
		status, h, body := postIntent(t, sim, "k-503", form)
		if status != http.StatusServiceUnavailable || (i == 1) != (h.Get("Idempotent-Replayed") == "true") {
			t.Fatalf("request %d: %d %v replayed=%q", i, status, body, h.Get("Idempotent-Replayed"))
		}
	}
	status, _, first := postIntent(t, sim, "k-ok", form)
	_, h, again := postIntent(t, sim, "k-ok", form)
	if status != http.StatusOK || first["status"] != "succeeded" || again["id"] != first["id"] || h.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("first %v, again %v", first, again)
	}
	other := intentForm("cus_2", "1001")
	if status, _, body := postIntent(t, sim, "k-ok", other); status != http.StatusBadRequest || errorCode(body) != "key_reused" {
		t.Fatalf("key reused: %d %v", status, body)
	}
	search := func(q string) (int, map[string]any) {
		req, _ := http.NewRequest(http.MethodGet, sim.URL()+"/v1/payment_intents/search?"+url.Values{"query": {q}}.Encode(), nil)
		status, _, body := do(t, req)
		return status, body
	}
	status, found := search(`metadata['hookline_key']:'k-cus_2'`)
	data, _ := found["data"].([]any)
	if status != http.StatusOK || len(data) != 1 || data[0].(map[string]any)["id"] != first["id"] {
		t.Fatalf("search: %d %v", status, found)
	}
	if status, body := search(`amount>100`); status != http.StatusBadRequest {
		t.Fatalf("an unsupported query: %d %v", status, body)
	}
	if sim.Charges.SucceededCount("evt-cus_2") != 1 || sim.Charges.Creates() != 5 {
		t.Fatalf("%d charges, %d creates", sim.Charges.SucceededCount("evt-cus_2"), sim.Charges.Creates())
	}
}

// TestStripeFaceKeepsStripesKeyAndSearchRules: keys longer than 255
// characters and metadata values longer than 500 are refused, and a search
// reads only \' as an escape, so doubled backslashes find nothing.
func TestStripeFaceKeepsStripesKeyAndSearchRules(t *testing.T) {
	sim := start(t, providersim.Config{Profile: providersim.ProfileHonoursKeys})
	if status, _, body := postIntent(t, sim, strings.Repeat("k", 256), intentForm("cus_3", "1000")); status != http.StatusBadRequest || errorCode(body) != "idempotency_key_too_long" {
		t.Fatalf("256-character key: %d %v", status, body)
	}
	long := intentForm("cus_3", "1000")
	long.Set("metadata[note]", strings.Repeat("n", 501))
	if status, _, body := postIntent(t, sim, "k-long-meta", long); status != http.StatusBadRequest || errorCode(body) != "parameter_invalid" {
		t.Fatalf("501-character metadata: %d %v", status, body)
	}
	form := intentForm("cus_3", "1000")
	form.Set("metadata[hookline_key]", `a'b\c`)
	if status, _, body := postIntent(t, sim, "k-escape", form); status != http.StatusOK {
		t.Fatalf("create: %d %v", status, body)
	}
	tests := []struct {
		query string
		found int
		ok    bool
	}{
		{query: `metadata['hookline_key']:'a\'b\c'`, found: 1, ok: true},
		{query: `metadata['hookline_key']:'a\'b\\c'`, found: 0, ok: true},
		{query: `metadata['hookline_key']:'a'b\c'`, ok: false},
		{query: `metadata['hookline_key']:'a\'b\c`, ok: false},
		{query: `metadata['']:'x'`, ok: false},
	}
	for _, tc := range tests {
		req, _ := http.NewRequest(http.MethodGet, sim.URL()+"/v1/payment_intents/search?"+url.Values{"query": {tc.query}}.Encode(), nil)
		status, _, body := do(t, req)
		data, _ := body["data"].([]any)
		if (status == http.StatusOK) != tc.ok || len(data) != tc.found {
			t.Errorf("search %s: %d, %d found; want ok=%v, %d found", tc.query, status, len(data), tc.ok, tc.found)
		}
	}
	if n := sim.Charges.TotalCharges(); n != 1 {
		t.Fatalf("%d charges, want 1", n)
	}
}
