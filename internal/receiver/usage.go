package receiver

import (
	"encoding/json"
	"fmt"

	"github.com/aws/aws-lambda-go/events"

	"github.com/hookline/hookline/internal/usagein"
	"github.com/hookline/hookline/pkg/webhook"
)

// readUsage reads a verified delivery of a usage source under the source's
// mapping ([usagein.Mapping.Read]) into the items to record and enqueue:
// one per event, whose message is the record the door read
// ([usagein.Mapping.Envelope]), so that the spend worker never reads a
// producer's shape; a batch's events refused on their own are in
// Refused. A body that cannot be read at all is an error naming the
// field. A usage.recorded body keeps the delivery's ID as its intake
// identity, and its earlier builds' message (the body itself) as the
// same event's, so that a retry of a delivery accepted before envelopes
// is a duplicate rather than a conflict.
func (h *Handler) readUsage(src source, req events.APIGatewayV2HTTPRequest, body []byte, d webhook.Delivery) (webhook.Delivery, error) {
	name := src.spec.Name
	m := h.usage.For(name)
	deliveryID := ""
	if len(d.Items) > 0 {
		deliveryID = d.Items[0].EventID
	}
	b, err := m.Read(body, usagein.Request{Source: name, DeliveryID: deliveryID, Headers: req.Headers,
		ContentType: webhook.HeaderMap(req.Headers).Get("content-type"), Seen: h.now()})
	if err != nil {
		return webhook.Delivery{}, fmt.Errorf("receiver: usage body: %w", err)
	}
	out := webhook.Delivery{Ack: d.Ack}
	for _, it := range b.Items {
		if it.Err != nil {
			out.Refused = append(out.Refused, webhook.ItemError{Index: it.Index, Err: it.Err})
			continue
		}
		item := webhook.Item{EventID: it.EventID, Type: it.Record.Type, Timestamp: it.Record.OccurredAt, Payload: m.Envelope(name, it.Record)}
		if m.Format == usagein.FormatHookline {
			item = item.WithEarlierPayload(body)
		}
		out.Items = append(out.Items, item)
	}
	return out, nil
}

// refusal is what a batch's answer says of an item refused on its own:
// its index, its code, and the member refused and why, when one was.
type refusal struct {
	Index  int    `json:"index"`
	Error  string `json:"error"`
	Field  string `json:"field,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// batchBody is the receiver's answer to a batch: the counts, and the items
// refused on their own, so that a sender can fix them. The count of usage
// events acknowledged as conflicts ([Handler.keepFirst]) is there only when
// there are some.
func batchBody(accepted, duplicate, refusedN, tooOld, conflicts int, refused []refusal) string {
	body := fmt.Sprintf(`{"status":"accepted","accepted":%d,"duplicate":%d,"refused":%d,"too_old":%d`, accepted, duplicate, refusedN, tooOld)
	if conflicts > 0 {
		body += fmt.Sprintf(`,"conflict":%d`, conflicts)
	}
	if len(refused) > 0 {
		items, err := json.Marshal(refused)
		if err == nil {
			body += `,"refused_items":` + string(items)
		}
	}
	return body + "}"
}
