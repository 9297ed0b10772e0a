package webhook

import (
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// GitHub, Shopify and Razorpay name an event only in a header
// (X-GitHub-Delivery, X-Shopify-Event-Id, X-Razorpay-Event-Id) that
// their HMAC, over the body alone, does not cover. Anyone who holds one
// delivery could send its body and signature again under a new ID, and
// an identity taken from that header would make it a new event. So the
// identity of these presets is a digest of the signed body: the same
// bytes are the same event, whatever ID travels with them. The header's
// ID is kept in the envelope as header_id, for operators to find the
// delivery at the provider, and as the item's legacy identity.

// BodyDigestID is the identity of an event that its provider names only
// in a header no signature covers: "sha256:" and the hex SHA-256 of the
// body as signed.
func BodyDigestID(body []byte) string {
	const prefix = "sha256:"
	var buf [len(prefix) + 2*sha256.Size]byte
	sum := sha256.Sum256(body)
	copy(buf[:], prefix)
	hex.Encode(buf[len(prefix):], sum[:])
	return string(buf[:])
}

// legacyEnvelope is what rebuilds the queue message that builds before
// the digest made for an item ([Item.LegacyPayload]).
type legacyEnvelope struct {
	provider Scheme
	typ      string
	item     []byte
	// raw is the earlier payload itself ([Item.WithEarlierPayload]).
	raw []byte
}

// headerIdentified is the delivery of one event whose provider names it
// only in the unsigned header idHeader: its identity is the body's
// digest, and the header's ID, when it is a usable ID, its header_id and
// legacy identity. A value that is not one (absent, or two IDs that API
// Gateway joined with ", ") is kept nowhere; it could not set the
// identity in any case.
func headerIdentified(provider Scheme, h Headers, idHeader, typ string, ts time.Time, body []byte) (Item, error) {
	id := BodyDigestID(body)
	headerID := h.Get(idHeader)
	if checkEventID(headerID) != nil {
		headerID = ""
	}
	it, err := newItemWith(provider, []string{id}, 0, []string{typ}, 0, body, false, headerID)
	if err != nil {
		return Item{}, err
	}
	it.DigestID = true
	it.LegacyEventID = headerID
	it.Timestamp = ts
	it.legacy = legacyEnvelope{provider: provider, typ: typ, item: body}
	return it, nil
}

// LegacyPayload is the queue message that builds before [Item.DigestID]
// made for this event, which they stored under LegacyEventID: the same
// envelope with the header's ID as its id (for Braintree: with the XML
// escaped as encoding/json escapes it, [braintreeLegacyItem]). The
// intake matches a record under the legacy identity against it, so that
// only a record of these very bytes counts as this event. It is nil when
// the item has no legacy identity.
func (it Item) LegacyPayload() []byte {
	if it.LegacyEventID != "" && it.legacy.raw != nil {
		return it.legacy.raw
	}
	if it.LegacyEventID == "" || it.legacy.provider == "" {
		return nil
	}
	old, err := newItem(it.legacy.provider, []string{it.LegacyEventID}, 0, []string{it.legacy.typ}, 0, it.legacy.item, false)
	if err != nil {
		return nil
	}
	return old.Payload
}
