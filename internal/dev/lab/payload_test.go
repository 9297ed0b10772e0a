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
	}{
		{name: "Stripe invoice.paid as written", file: "stripe-invoice-paid.json", shape: "Stripe invoice event"},
		{name: "Adyen notification as written", file: "adyen-authorisation.json", shape: "Adyen notification"},
		{name: "Adyen padded to 4 KB", file: "adyen-authorisation.json", size: 4096, wantSize: 4096, shape: "Adyen notification"},
		{name: "Stripe never shortened", file: "stripe-invoice-paid.json", size: 100, shape: "Stripe invoice event"},
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
