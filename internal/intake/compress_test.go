package intake

import (
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// BenchmarkMarshalRecord is the cost of writing the Stripe fixture's
// record as an item, with its payload compressed, against the same record
// marshalled as it was before (the payload as a string), in the same run.
func BenchmarkMarshalRecord(b *testing.B) {
	body, err := os.ReadFile("../../testdata/payloads/stripe-invoice-paid.json")
	if err != nil {
		b.Fatal(err)
	}
	rec := Record{PK: "payments#evt_1", Source: "payments", EventID: "evt_1", Payload: string(body), PayloadSHA256: PayloadHash(body)}
	b.Run("plain", func(b *testing.B) {
		for b.Loop() {
			if _, err := attributevalue.MarshalMap(record(rec)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("compressed", func(b *testing.B) {
		for b.Loop() {
			if _, err := attributevalue.MarshalMap(rec); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestRecordReadsEitherForm: a record written compressed, and one written
// before payload_gz existed, read back with the body as it came.
func TestRecordReadsEitherForm(t *testing.T) {
	big := []byte(`{"id":"evt_1","data":{"note":"` + string(make([]byte, 0)) + `aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}}`)
	for _, tt := range []struct {
		name    string
		payload string
		marshal func(Record) (map[string]any, error)
		wantGz  bool
	}{
		{name: "compressed", payload: string(big), wantGz: true},
		{name: "too small to compress", payload: `{"id":"e"}`},
		{name: "written before payload_gz", payload: string(big), marshal: func(r Record) (map[string]any, error) { return nil, nil }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := Record{PK: "payments#e", Payload: tt.payload}
			item, err := attributevalue.MarshalMap(rec)
			if tt.marshal != nil {
				item, err = attributevalue.MarshalMap(record(rec))
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, gz := item[attrPayloadGz]; gz != tt.wantGz {
				t.Fatalf("payload_gz stored %v, want %v", gz, tt.wantGz)
			}
			var back Record
			if err := attributevalue.UnmarshalMap(item, &back); err != nil || back.Payload != tt.payload {
				t.Fatalf("read back %q, %v", back.Payload, err)
			}
		})
	}
}

// TestAStoredPayloadBeyondOneItemIsAnErrorNotCut: a compressed payload
// that inflates past one item (no record of this build holds one: Accept
// refuses a payload over MaxPayload) is read back as an error, never as
// the first 400 KB of it, which a replay would send as the event.
func TestAStoredPayloadBeyondOneItemIsAnErrorNotCut(t *testing.T) {
	item, err := attributevalue.MarshalMap(record{PK: "payments#e"})
	if err != nil {
		t.Fatal(err)
	}
	delete(item, attrPayload)
	item[attrPayloadGz] = &ddbtypes.AttributeValueMemberB{Value: compress(string(make([]byte, MaxItemSize+1)))}
	var back Record
	if err := attributevalue.UnmarshalMap(item, &back); err == nil {
		t.Fatalf("read back %d bytes of a %d-byte payload, and no error", len(back.Payload), MaxItemSize+1)
	}
}
