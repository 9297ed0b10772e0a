package paymentworker_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookline/hookline/internal/paymentworker"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

func exampleMappings(t *testing.T) *paymentworker.Mappings {
	t.Helper()
	raw, err := os.ReadFile("testdata/mapping/mappings.example.json")
	if err != nil {
		t.Fatal(err)
	}
	ms, err := paymentworker.ParseMappings(raw)
	if err != nil {
		t.Fatalf("the shipped example does not parse: %v", err)
	}
	return ms
}

func mappingMessage(source, body string) events.SQSMessage {
	s := source
	return events.SQSMessage{MessageId: "m-1", Body: body, MessageAttributes: map[string]events.SQSMessageAttribute{
		"source": {DataType: "String", StringValue: &s},
	}}
}

// mapped is what a golden file holds: the charge a body maps to, or the
// dead-letter reason when it does not map.
type mapped struct {
	Source   string `json:"source"`
	Key      string `json:"key,omitempty"`
	Charge   any    `json:"charge,omitempty"`
	Hash     string `json:"hash,omitempty"`
	NoEffect string `json:"not_an_effect,omitempty"`
	DLQWith  string `json:"dead_letter_reason,omitempty"`
}

// TestMappingGolden maps each shipped fixture with the shipped example
// configuration, twice, and compares the result with its golden file
// (go test -run TestMappingGolden ./internal/paymentworker -update rewrites them).
func TestMappingGolden(t *testing.T) {
	ms := exampleMappings(t)
	tests := []struct{ name, source, fixture string }{
		{name: "stripe invoice.finalized", source: "stripe", fixture: "stripe_invoice_finalized"},
		{name: "stripe invoice without a customer", source: "stripe", fixture: "stripe_invoice_no_customer"},
		{name: "hookline's own shape", source: "payments", fixture: "hookline_payment"},
		{name: "hookline amount with a fraction", source: "payments", fixture: "hookline_amount_fraction"},
		{name: "stripe event under the hookline mapping", source: "billing", fixture: "stripe_invoice_finalized"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join("testdata/mapping", tc.fixture+".json"))
			if err != nil {
				t.Fatal(err)
			}
			run := func() []byte {
				p, err := paymentworker.ParseMessageWith(mappingMessage(tc.source, string(body)), ms)
				out := mapped{Source: tc.source}
				if err != nil {
					if !errors.Is(err, paymentworker.ErrMalformed) {
						t.Fatalf("error %v does not wrap ErrMalformed", err)
					}
					out.DLQWith = paymentworker.MalformedReason(err)
				} else if p.NotAnEffect != "" {
					out.NoEffect = p.NotAnEffect
				} else {
					out.Key, out.Charge, out.Hash = p.Key(), p.Charge, p.Hash()
				}
				b, _ := json.MarshalIndent(out, "", "  ")
				return append(b, '\n')
			}
			first, second := run(), run()
			if !bytes.Equal(first, second) {
				t.Fatalf("mapping is not idempotent:\n%s\n%s", first, second)
			}
			golden := filepath.Join("testdata/mapping", strings.ReplaceAll(tc.name, " ", "_")+".golden.json")
			if *update {
				if err := os.WriteFile(golden, first, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(first, want) {
				t.Fatalf("differs from %s (go test -update if intended):\ngot:\n%s\nwant:\n%s", golden, first, want)
			}
		})
	}
}

func TestParseMappingsErrorsNameSourceAndField(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want []string // every one must appear in the error
	}{
		{name: "missing amount", raw: `{"stripe":{"customer":"/c","currency":"/cur"}}`, want: []string{`source "stripe"`, "amount: no JSON pointer"}},
		{name: "two sources, every problem", raw: `{"a":{"amount":"/a","currency":"/c"},"b":{"customer":"data.customer","amount":"/a","currency":"/c"}}`,
			want: []string{`source "a": customer: no JSON pointer`, `source "b": customer: "data.customer" is not a JSON pointer`}},
		{name: "bad escape", raw: `{"s":{"customer":"/a~2b","amount":"/a","currency":"/c"}}`, want: []string{`source "s"`, "customer", "~"}},
		{name: "misspelt field", raw: `{"s":{"customer":"/c","amount":"/a","curency":"/c"}}`, want: []string{"unknown field", "curency"}},
		{name: "empty source name", raw: `{"":{"customer":"/c","amount":"/a","currency":"/c"}}`, want: []string{"source name is empty"}},
		{name: "not JSON", raw: `stripe=/data`, want: []string{"bad payload mapping"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := paymentworker.ParseMappings([]byte(tc.raw))
			if !errors.Is(err, paymentworker.ErrBadMapping) {
				t.Fatalf("err %v, want ErrBadMapping", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestMappingApply(t *testing.T) {
	m := paymentworker.Mapping{EventID: "/meta/ids/0", Customer: "/a~1b/c~0d", Amount: "/items/1/cents", Currency: "/cur"}
	tests := []struct {
		name, body, eventID string
		wantErr             string
		wantAmount          int64
		wantEvent           string
	}{
		{name: "escapes and array indexes", body: `{"meta":{"ids":["e1"]},"a/b":{"c~d":"cus_1"},"items":[{},{"cents":700}],"cur":"gbp"}`, wantAmount: 700, wantEvent: "e1"},
		{name: "intake event id wins", body: `{"meta":{"ids":["e1"]},"a/b":{"c~d":"cus_1"},"items":[{},{"cents":700}],"cur":"gbp"}`, eventID: "e9", wantAmount: 700, wantEvent: "e9"},
		{name: "index out of range", body: `{"meta":{"ids":["e1"]},"a/b":{"c~d":"cus_1"},"items":[{"cents":700}],"cur":"gbp"}`, wantErr: "amount: /items/1/cents is missing"},
		{name: "customer is a number", body: `{"meta":{"ids":["e1"]},"a/b":{"c~d":5},"items":[{},{"cents":700}],"cur":"gbp"}`, wantErr: "customer: /a~1b/c~0d is not a string"},
		{name: "negative amount", body: `{"meta":{"ids":["e1"]},"a/b":{"c~d":"c"},"items":[{},{"cents":-1}],"cur":"gbp"}`, wantErr: "amount: /items/1/cents is not positive"},
		{name: "amount beyond int64", body: `{"meta":{"ids":["e1"]},"a/b":{"c~d":"c"},"items":[{},{"cents":99999999999999999999}],"cur":"gbp"}`, wantErr: "not an integer"},
		{name: "no event id anywhere", body: `{"a/b":{"c~d":"c"},"items":[{},{"cents":1}],"cur":"gbp"}`, wantErr: "event_id: /meta/ids/0 is missing"},
		{name: "not JSON", body: `<xml/>`, wantErr: "body is not JSON"},
		{name: "empty currency", body: `{"meta":{"ids":["e1"]},"a/b":{"c~d":"c"},"items":[{},{"cents":1}],"cur":""}`, wantErr: "currency: /cur is empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := m.Apply([]byte(tc.body), tc.eventID)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || req.Amount != tc.wantAmount || req.EventID != tc.wantEvent || req.Customer != "cus_1" || req.Currency != "gbp" {
				t.Fatalf("got %+v, err %v", req, err)
			}
		})
	}
}

func TestMappingsFor(t *testing.T) {
	ms, err := paymentworker.NewMappings(map[string]paymentworker.Mapping{"stripe": paymentworker.StripeInvoiceMapping})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ms.For("stripe"), paymentworker.StripeInvoiceMapping) || !reflect.DeepEqual(ms.For("other"), paymentworker.HooklineMapping) {
		t.Fatalf("stripe -> %+v, other -> %+v", ms.For("stripe"), ms.For("other"))
	}
	var none *paymentworker.Mappings
	if !reflect.DeepEqual(none.For("x"), paymentworker.HooklineMapping) || !reflect.DeepEqual(paymentworker.DefaultMappings().For("x"), paymentworker.HooklineMapping) {
		t.Fatal("no mappings must mean hookline's shape")
	}
	withDefault, err := paymentworker.NewMappings(map[string]paymentworker.Mapping{"*": paymentworker.StripeInvoiceMapping})
	if err != nil || !reflect.DeepEqual(withDefault.For("anything"), paymentworker.StripeInvoiceMapping) {
		t.Fatalf("the * mapping must apply to unnamed sources: %v", err)
	}
}

// BenchmarkParseMessageWith measures mapping one body: hookline's shape
// and the Stripe invoice.finalized fixture (about 1.3 KiB).
func BenchmarkParseMessageWith(b *testing.B) {
	raw, err := os.ReadFile("testdata/mapping/mappings.example.json")
	if err != nil {
		b.Fatal(err)
	}
	ms, err := paymentworker.ParseMappings(raw)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct{ name, source, fixture string }{
		{"hookline", "payments", "hookline_payment"},
		{"stripe_invoice", "stripe", "stripe_invoice_finalized"},
	} {
		body, err := os.ReadFile(filepath.Join("testdata/mapping", bc.fixture+".json"))
		if err != nil {
			b.Fatal(err)
		}
		m := mappingMessage(bc.source, string(body))
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := paymentworker.ParseMessageWith(m, ms); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
