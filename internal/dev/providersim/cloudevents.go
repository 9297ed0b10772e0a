package providersim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/hookline/hookline/internal/usagein"
	"github.com/hookline/hookline/pkg/webhook"
)

// UsageCloudEvent is one usage event as a metering producer sends it in
// CloudEvents 1.0 JSON (OpenMeter's ingest format): its value in
// data.value, its workload in subject.
type UsageCloudEvent struct {
	Source, ID, Type, Subject string
	// Time is the event's time attribute; zero leaves it out.
	Time time.Time
	// Value is data.value: a JSON number's text, such as "12.5".
	Value string
}

// cloudEventJSON is the JSON form of a [UsageCloudEvent].
type cloudEventJSON struct {
	SpecVersion string          `json:"specversion"`
	ID          string          `json:"id"`
	Source      string          `json:"source"`
	Type        string          `json:"type"`
	Subject     string          `json:"subject,omitempty"`
	Time        string          `json:"time,omitempty"`
	Content     string          `json:"datacontenttype"`
	Data        json.RawMessage `json:"data"`
}

// CloudEventsBody returns the body of evs and its Content-Type: the one
// event in structured mode, or a batch when batch is set.
func CloudEventsBody(evs []UsageCloudEvent, batch bool) ([]byte, string, error) {
	out := make([]cloudEventJSON, len(evs))
	for i, ev := range evs {
		if !json.Valid([]byte(ev.Value)) {
			return nil, "", fmt.Errorf("value %q is not a JSON number", ev.Value)
		}
		out[i] = cloudEventJSON{SpecVersion: usagein.SpecVersion, ID: ev.ID, Source: ev.Source, Type: ev.Type, Subject: ev.Subject,
			Content: "application/json", Data: json.RawMessage(`{"value":` + ev.Value + `}`)}
		if !ev.Time.IsZero() {
			out[i].Time = ev.Time.UTC().Format(time.RFC3339Nano)
		}
	}
	if batch {
		b, err := json.Marshal(out)
		return b, usagein.MediaCloudEventBatch, err
	}
	if len(out) != 1 {
		return nil, "", fmt.Errorf("structured mode sends one event, not %d", len(out))
	}
	b, err := json.Marshal(out[0])
	return b, usagein.MediaCloudEvent, err
}

// StandardSigner signs as a producer's Standard Webhooks (or svix) library
// does, with secret, under the headers webhook-id, webhook-timestamp and
// webhook-signature, or, with svixNames, Svix's svix-id, svix-timestamp and
// svix-signature; contentType is sent with it.
func StandardSigner(secret, contentType string, svixNames bool) Signer {
	return func(id string, ts time.Time, body []byte) (http.Header, error) {
		h, err := webhook.SignHeaders(webhook.SchemeStandard, []string{secret}, id, ts, body)
		if err != nil {
			return nil, err
		}
		if svixNames {
			for _, n := range [][2]string{{webhook.HeaderWebhookID, webhook.HeaderSvixID},
				{webhook.HeaderWebhookTimestamp, webhook.HeaderSvixTimestamp}, {webhook.HeaderWebhookSignature, webhook.HeaderSvixSignature}} {
				h.Set(n[1], h.Get(n[0]))
				h.Del(n[0])
			}
		}
		h.Set("Content-Type", contentType)
		return h, nil
	}
}
