package webhook

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"
)

// Braintree posts a form with bt_signature and bt_payload. bt_payload is
// base64 XML (a <notification> with kind, timestamp and subject);
// bt_signature is "public_key|hex" pairs joined by '&', each an
// HMAC-SHA1 of bt_payload as sent, keyed by the SHA-1 of the private
// key. A secret is "public_key:private_key". Braintree has no event ID:
// the identity is the notification's kind, its subject's id and its
// timestamp. The timestamp is inside the signed payload, but Braintree
// retries for up to 24 hours with the same payload, so it is not held to
// the replay window; it is the item's time, marked signed, so that a
// replay older than the intake remembers can be dropped. Braintree
// retries hourly until it gets a 2xx within 30 s.
// https://developer.paypal.com/braintree/docs/guides/webhooks/parse
var braintreePreset = preset{
	decode: braintreeKey,
	needs:  []string{FieldSecret},
}

// braintreeKey keys "public_key:private_key".
func braintreeKey(secret string) (*macKey, error) {
	public, private, ok := strings.Cut(secret, ":")
	if !ok || public == "" || private == "" {
		return nil, fmt.Errorf("want public_key:private_key: %w", ErrBadSecret)
	}
	sum := sha1.Sum([]byte(private))
	k := newHashKey(sum[:], sha1.New)
	k.label = public
	return k, nil
}

func verifyBraintree(body []byte, keys []*macKey) (Delivery, error) {
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return Delivery{}, fmt.Errorf("want a form: %w", ErrMalformedBody)
	}
	sig, payload := form.Get("bt_signature"), form.Get("bt_payload")
	if sig == "" {
		return Delivery{}, fmt.Errorf("bt_signature: %w", ErrMissingSignature)
	}
	if payload == "" {
		return Delivery{}, fmt.Errorf("bt_payload: %w", ErrMalformedBody)
	}
	if !braintreeMatches(keys, sig, payload) {
		return Delivery{}, ErrBadSignature
	}
	xmlText, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(payload, "\n", ""))
	if err != nil {
		return Delivery{}, fmt.Errorf("bt_payload: want base64: %w", ErrMalformedBody)
	}
	n, err := parseBraintree(xmlText)
	if err != nil {
		return Delivery{}, err
	}
	id := n.kind + ":" + n.subject + ":" + n.timestamp
	if err := checkEventID(id); err != nil {
		return Delivery{}, fmt.Errorf("kind, subject id and timestamp: %w", err)
	}
	ts, _ := time.Parse(time.RFC3339, n.timestamp)
	item, err := braintreeItem(xmlText)
	if err != nil {
		return Delivery{}, err
	}
	d, err := singleSigned(SchemeBraintree, id, n.kind, ts.UTC(), item)
	if err == nil {
		d.Items[0].LegacyEventID = id
		d.Items[0].legacy = legacyEnvelope{provider: SchemeBraintree, typ: n.kind, item: braintreeLegacyItem(xmlText)}
	}
	return d, err
}

// braintreeMatches checks each "public|hex" pair against the key of its
// public key.
func braintreeMatches(keys []*macKey, sig, payload string) bool {
	for pair := range strings.SplitSeq(sig, "&") {
		public, value, ok := strings.Cut(pair, "|")
		if !ok || len(value) != 2*sha1.Size {
			continue
		}
		var want [sha1.Size]byte
		if _, err := hex.Decode(want[:], stringBytes(value)); err != nil {
			continue
		}
		for _, k := range keys {
			if k.label != public {
				continue
			}
			st := k.get()
			ok := hmac.Equal(st.of(stringBytes(payload)), want[:])
			k.put(st)
			if ok {
				return true
			}
		}
	}
	return false
}

// braintreeNotification is what the identity is built from.
type braintreeNotification struct {
	kind, timestamp, subject string
}

// parseBraintree reads kind, timestamp and the id of the subject's first
// child: <notification><kind/><timestamp/><subject><X><id/>...
func parseBraintree(text []byte) (braintreeNotification, error) {
	var n braintreeNotification
	dec := xml.NewDecoder(bytes.NewReader(text))
	var path []string
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return n, fmt.Errorf("bt_payload: want XML: %w", ErrMalformedBody)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			path = append(path, t.Name.Local)
		case xml.EndElement:
			path = path[:len(path)-1]
		case xml.CharData:
			v := strings.TrimSpace(string(t))
			switch {
			case len(path) == 2 && path[1] == "kind":
				n.kind = v
			case len(path) == 2 && path[1] == "timestamp":
				n.timestamp = v
			case len(path) == 4 && path[1] == "subject" && path[3] == "id" && n.subject == "":
				n.subject = v
			}
		}
	}
	if n.kind == "" || n.timestamp == "" {
		return n, fmt.Errorf("bt_payload: kind and timestamp: %w", ErrMissingEventID)
	}
	if n.subject == "" {
		n.subject = "-" // check notifications carry no subject
	}
	return n, nil
}

// SignBraintree returns the form body Braintree would post for the XML
// notification, signed with the "public_key:private_key" secret.
func SignBraintree(secret string, notification []byte) (string, error) {
	k, err := braintreeKey(secret)
	if err != nil {
		return "", err
	}
	payload := base64.StdEncoding.EncodeToString(notification)
	st := k.get()
	sig := k.label + "|" + hex.EncodeToString(st.of([]byte(payload)))
	k.put(st)
	return url.Values{"bt_signature": {sig}, "bt_payload": {payload}}.Encode(), nil
}
