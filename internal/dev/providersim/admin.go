package providersim

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/hookline/hookline/pkg/provider"
)

// usageRequest is the body of POST /sim/usage: a usage record for the
// export, and what happens to its webhook.
type usageRequest struct {
	RecordID    string    `json:"record_id"`
	WorkloadRef string    `json:"workload_ref"`
	Units       int64     `json:"units"`
	OccurredAt  time.Time `json:"occurred_at"`
	// Webhook is "send" (default), "drop" or "alter".
	Webhook      string `json:"webhook"`
	WebhookUnits int64  `json:"webhook_units"`
	// PublishDelay is a Go duration ("3m"): the record reaches the export
	// that long after it occurred.
	PublishDelay string `json:"publish_delay"`
}

// SetUsageWebhooks makes POST /sim/usage send each record's webhook through
// snd (nil: only record it).
func (s *core) SetUsageWebhooks(snd *Sender) { s.webhooks.Store(snd) }

// handleAddUsage records usage as the provider would (POST /sim/usage) and,
// when the simulator has a usage webhook sender, emits its webhook at once.
// It is how a person drives the usage path of a local run.
func (s *core) handleAddUsage(w http.ResponseWriter, r *http.Request) {
	var req usageRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid JSON"})
		return
	}
	if req.OccurredAt.IsZero() {
		req.OccurredAt = s.now()
	}
	opts := UsageOptions{Webhook: WebhookSend, WebhookUnits: req.WebhookUnits}
	switch req.Webhook {
	case "drop":
		opts.Webhook = WebhookDrop
	case "alter":
		opts.Webhook = WebhookAltered
	}
	if req.PublishDelay != "" {
		d, err := time.ParseDuration(req.PublishDelay)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid publish_delay"})
			return
		}
		opts.PublishDelay = d
	}
	rec := provider.UsageRecord{RecordID: req.RecordID, WorkloadRef: req.WorkloadRef, Units: req.Units, OccurredAt: req.OccurredAt.UTC()}
	if err := s.AddUsage(rec, opts); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	out := map[string]any{"record_id": rec.RecordID, "webhook": req.Webhook}
	if snd := s.webhooks.Load(); snd != nil {
		rep, err := s.EmitUsage(r.Context(), snd)
		if err != nil {
			writeJSON(w, http.StatusBadGateway, map[string]string{"error": err.Error()})
			return
		}
		out["sent"], out["dropped"] = len(rep.Sent), len(rep.Dropped)
		if len(rep.Sent) > 0 {
			out["receiver_status"] = rep.Sent[len(rep.Sent)-1].StatusCode
		}
	}
	writeJSON(w, http.StatusOK, out)
}
