package webhook

import "fmt"

// Svix sends Standard Webhooks under its own header names. The MAC is the
// same (HMAC-SHA256 of id.timestamp.body), so a standard-webhooks source
// takes either spelling of each header, as the svix library does.
const (
	HeaderSvixID        = "svix-id"
	HeaderSvixTimestamp = "svix-timestamp"
	HeaderSvixSignature = "svix-signature"
)

// standardHeaderNames pairs each Standard Webhooks header with Svix's name
// for it.
var standardHeaderNames = [3][2]string{
	{HeaderWebhookID, HeaderSvixID},
	{HeaderWebhookTimestamp, HeaderSvixTimestamp},
	{HeaderWebhookSignature, HeaderSvixSignature},
}

// standardHeaders returns the id, timestamp and signature headers of a
// Standard Webhooks delivery under either spelling. A header given under
// both names with different values is refused: the two would sign
// different messages, and which one a library reads first differs.
func standardHeaders(h Headers) (id, timestamp, signature string, err error) {
	var got [3]string
	for i, names := range standardHeaderNames {
		std, svix := h.Get(names[0]), h.Get(names[1])
		if std != "" && svix != "" && std != svix {
			return "", "", "", fmt.Errorf("%s and %s differ: %w", names[0], names[1], ErrMalformedHeader)
		}
		got[i] = std
		if got[i] == "" {
			got[i] = svix
		}
	}
	return got[0], got[1], got[2], nil
}
