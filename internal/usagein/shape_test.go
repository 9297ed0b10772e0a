package usagein

import (
	"testing"

	"github.com/hookline/hookline/pkg/provider"
)

func TestCheckShapeNeverLetsAHeaderDecide(t *testing.T) {
	tests := []struct {
		name        string
		batch       bool
		contentType string
		mode        string
		field       string // "" for accepted, "-" for a refusal without a field
	}{
		{"event as cloudevents+json", false, MediaCloudEvent, ModeAny, ""},
		{"event with a charset", false, MediaCloudEvent + "; charset=utf-8", ModeAny, ""},
		{"batch as cloudevents-batch+json", true, MediaCloudEventBatch, ModeAny, ""},
		{"event as application/json", false, "application/json", ModeAny, ""},
		{"batch with no content-type", true, "", ModeAny, ""},
		{"batch labelled one event", true, MediaCloudEvent, ModeAny, "content-type"},
		{"event labelled a batch", false, MediaCloudEventBatch, ModeAny, "content-type"},
		{"text/plain", false, "text/plain", ModeAny, "content-type"},
		{"not a media type", false, "json;;", ModeAny, "content-type"},
		{"batch on a structured source", true, MediaCloudEventBatch, ModeStructured, "-"},
		{"event on a batch source", false, MediaCloudEvent, ModeBatch, "-"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := checkShape(tc.batch, tc.contentType, tc.mode)
			fe, _ := provider.AsFieldError(err)
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.field == "-" && (fe == nil || fe.Field != ""):
				t.Fatalf("err = %v, want a refusal of the body", err)
			case tc.field != "" && tc.field != "-" && (fe == nil || fe.Field != tc.field):
				t.Fatalf("err = %v, want a refusal naming %s", err, tc.field)
			}
		})
	}
}

func TestBinaryModeIsRefused(t *testing.T) {
	// Given CloudEvents' binary mode, whose id and source are headers no
	// signature covers, then the request is refused naming the header
	err := checkBinaryMode(map[string]string{"content-type": "application/json", "Ce-Id": "evt-1"})
	if fe, ok := provider.AsFieldError(err); !ok || fe.Field != "ce-id" {
		t.Fatalf("err = %v, want a refusal naming ce-id", err)
	}
	if err := checkBinaryMode(map[string]string{"content-type": MediaCloudEvent, "webhook-id": "msg_1"}); err != nil {
		t.Fatalf("structured mode refused: %v", err)
	}
}
