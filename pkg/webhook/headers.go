package webhook

import (
	"net/http"
	"strings"
)

// Header names read and written by this package, in the lower case that API
// Gateway HTTP APIs deliver.
const (
	HeaderWebhookID        = "webhook-id"
	HeaderWebhookTimestamp = "webhook-timestamp"
	HeaderWebhookSignature = "webhook-signature"
	HeaderStripeSignature  = "stripe-signature"
)

// Headers looks up a request header by name, ignoring case. [net/http.Header]
// satisfies it as it is; use [HeaderMap] for a map such as the Headers of an
// API Gateway event.
type Headers interface {
	Get(name string) string
}

var (
	_ Headers = http.Header(nil)
	_ Headers = HeaderMap(nil)
)

// HeaderMap adapts a map of single header values, such as API Gateway's
// events.APIGatewayV2HTTPRequest.Headers, to [Headers]. API Gateway HTTP APIs
// lower-case the names; other keys are still found, case-insensitively.
type HeaderMap map[string]string

// Get returns the value of the named header, or "" if it is absent.
func (m HeaderMap) Get(name string) string {
	lower := strings.ToLower(name)
	if v, ok := m[lower]; ok {
		return v
	}
	for k, v := range m {
		if strings.EqualFold(k, lower) {
			return v
		}
	}
	return ""
}
