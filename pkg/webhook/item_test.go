package webhook

import (
	"encoding/json"
	"testing"
)

func TestNewItemKeepsValuesThatNeedEscapes(t *testing.T) {
	tests := []struct {
		name          string
		id, typ       []string
		wantID, wantT string
	}{
		{name: "plain", id: []string{"evt_1"}, typ: []string{"payment", "captured"}, wantID: "evt_1", wantT: "payment.captured"},
		{name: "joined identity", id: []string{"AUTHORISATION", "7914073381342284", "true"}, typ: []string{"AUTHORISATION"},
			wantID: "AUTHORISATION:7914073381342284:true", wantT: "AUTHORISATION"},
		{name: "quote and backslash", id: []string{`evt_"q\x`}, typ: []string{"t\x01é"}, wantID: `evt_"q\x`, wantT: "t\x01é"},
		{name: "no type", id: []string{"evt_2"}, wantID: "evt_2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Given parts, when an item is built, then its identity and type
			// are the values, and its payload is JSON holding them
			it, err := newItem(SchemeCheckout, tc.id, ':', tc.typ, '.', []byte(` {"a":1} `), false)
			if err != nil {
				t.Fatal(err)
			}
			var env ItemEnvelope
			if err := json.Unmarshal(it.Payload, &env); err != nil {
				t.Fatalf("payload %s: %v", it.Payload, err)
			}
			if it.EventID != tc.wantID || env.ID != tc.wantID || it.Type != tc.wantT || env.Type != tc.wantT || string(env.Item) != `{"a":1}` {
				t.Fatalf("item %q %q, envelope %+v", it.EventID, it.Type, env)
			}
		})
	}
}
