package lab

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPayloadsCarryEachEventsValues(t *testing.T) {
	tests := []struct {
		name, file string
		size       int
		wantSize   int // 0: the file's own size
		shape      string
		keyPrefix  string // the effect key is this and the event ID
	}{
		{name: "Stripe invoice.finalized as written", file: "stripe-invoice-finalized.json", shape: "Stripe invoice event", keyPrefix: "in_"},
		{name: "Adyen notification as written", file: "adyen-authorisation.json", shape: "Adyen notification"},
		{name: "Adyen padded to 4 KB", file: "adyen-authorisation.json", size: 4096, wantSize: 4096, shape: "Adyen notification"},
		{name: "Stripe never shortened", file: "stripe-invoice-finalized.json", size: 100, shape: "Stripe invoice event", keyPrefix: "in_"},
		{name: "the lab's own event padded", size: 4096, wantSize: 4096, shape: "hookline event"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Given a payload
			var p *Payload
			var err error
			want := tt.wantSize
			if tt.file == "" {
				p, err = SizedPayload(tt.size)
			} else {
				path := filepath.Join("..", "..", "..", "testdata", "payloads", tt.file)
				p, err = LoadPayload(path, tt.size)
				if raw, _ := os.ReadFile(path); want == 0 {
					want = len(strings.TrimSpace(string(raw)))
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(p.Name, tt.shape) || p.Size != want {
				t.Fatalf("payload %q of %d bytes, want a %s of %d", p.Name, p.Size, tt.shape, want)
			}
			// When an event's body is made, twice
			id := "evt_lab_0000042"
			body := p.body(id, 42)
			if again := p.body(id, 42); string(again) != string(body) {
				t.Fatal("the same event's body differs from one make to the next")
			}
			// Then the worker's mapping reads the event's own values from it
			req, err := p.mapping.Apply(body, "")
			if err != nil {
				t.Fatalf("%v\n%s", err, body)
			}
			if req.EventID != id || req.Customer != "cus_"+id || req.Amount != 1000+(42%50)*10 {
				t.Fatalf("charge %+v", req)
			}
			// and acts on it, keyed by its own effect key
			ms, err := p.mappings()
			if err != nil {
				t.Fatal(err)
			}
			pay, err := p.decide(ms, id, 42)
			if err != nil || pay.NotAnEffect != "" || pay.Key() != labSource+":"+tt.keyPrefix+id {
				t.Fatalf("the worker makes %+v, %v of it; want a charge keyed %s", pay, err, labSource+":"+tt.keyPrefix+id)
			}
		})
	}
}

// TestPayloadRefusesWhatTheRuleDoesNotActOn: a body the worker would
// acknowledge with no charge is refused at start, with the rule's reason
// and a body that acts, not sent for a run that charges nothing.
func TestPayloadRefusesWhatTheRuleDoesNotActOn(t *testing.T) {
	tests := []struct {
		name, file string
		body       string // when file is ""
		want       []string
	}{
		{name: "Stripe invoice.paid", file: "stripe-invoice-paid.json",
			want: []string{"not an effect", `/type is "invoice.paid", not invoice.finalized`, "stripe-invoice-finalized.json acts"}},
		{name: "an Adyen authorisation that failed",
			body: `{"notificationItems":[{"NotificationRequestItem":{"additionalData":{"shopperReference":"s_1"},"amount":{"currency":"EUR","value":2450},` +
				`"eventCode":"AUTHORISATION","merchantReference":"o_1","pspReference":"QFQTPCQ8HXSKGK82","success":"false"}}]}`,
			want: []string{"not an effect", `success is "false", not true`, "adyen-authorisation.json acts"}},
		{name: "a hookline event of another type", body: `{"id":"evt_1","type":"payment.refunded","data":{"customer":"c","amount":5,"currency":"usd"}}`,
			want: []string{"not an effect", `/type is "payment.refunded", not payment.requested`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Given a body of a shape the lab reads, that its rule does not act on
			path := filepath.Join("..", "..", "..", "testdata", "payloads", tt.file)
			if tt.file == "" {
				path = filepath.Join(t.TempDir(), "body.json")
				if err := os.WriteFile(path, []byte(tt.body), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			// When the lab loads it
			_, err := LoadPayload(path, 0)
			// Then it is refused, saying why and what acts
			if !errors.Is(err, ErrBadPayload) {
				t.Fatalf("%v, want ErrBadPayload", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("%v\nwant it to say %q", err, w)
				}
			}
		})
	}
}

func TestPayloadRefusesWhatTheWorkerCannotCharge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "body.json")
	for _, body := range []string{`{"id":"evt_1","type":"x"}`, `not json`} {
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadPayload(path, 0); !errors.Is(err, ErrBadPayload) {
			t.Fatalf("%s: %v, want ErrBadPayload", body, err)
		}
	}
}
