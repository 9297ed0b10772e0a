package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// readMembers checks that raw is one JSON object and sets out[i] to the
// raw value of its member names[i] (nil when absent). Names match
// exactly; a member read here that appears twice is refused, since
// parsers disagree on which one wins. It allocates nothing unless a key
// holds escapes.
func readMembers(raw []byte, names []string, out [][]byte) error {
	s := scanner{b: raw}
	s.skipSpace()
	if s.i >= len(raw) || raw[s.i] != '{' {
		return fmt.Errorf("want a JSON object: %w", ErrMalformedBody)
	}
	var refused *FieldError
	err := s.object(func(key []byte, escaped bool, value []byte) error {
		key, err := memberKey(key, escaped)
		if err != nil {
			return err
		}
		for i, n := range names {
			if string(key) != n {
				continue
			}
			if out[i] != nil {
				refused = &FieldError{Field: n, Reason: "member given twice"}
				return errJSON
			}
			out[i] = value
		}
		return nil
	})
	if refused != nil {
		return refused
	}
	if err == nil {
		s.skipSpace()
		if s.i != len(raw) {
			err = errJSON
		}
	}
	if err != nil {
		return fmt.Errorf("invalid JSON at offset %d: %w", s.i, ErrMalformedBody)
	}
	return nil
}

// memberKey is a member name as read: decoded when it holds escapes.
func memberKey(key []byte, escaped bool) ([]byte, error) {
	if !escaped {
		return key, nil
	}
	var k string
	if json.Unmarshal(append(append([]byte{'"'}, key...), '"'), &k) != nil {
		return nil, errJSON
	}
	return []byte(k), nil
}

// eachElement calls fn with the raw value of each element of the JSON
// array raw, in order, until fn returns an error.
func eachElement(raw []byte, fn func(i int, elem []byte) error) error {
	s := scanner{b: raw}
	s.skipSpace()
	if s.i >= len(raw) || raw[s.i] != '[' {
		return fmt.Errorf("want a JSON array: %w", ErrMalformedBody)
	}
	s.i++
	s.depth++
	s.skipSpace()
	if s.i < len(raw) && raw[s.i] == ']' {
		return nil
	}
	for n := 0; ; n++ {
		s.skipSpace()
		start := s.i
		if err := s.value(); err != nil {
			return fmt.Errorf("invalid JSON at offset %d: %w", s.i, ErrMalformedBody)
		}
		if err := fn(n, raw[start:s.i]); err != nil {
			return err
		}
		done, err := s.separator(']')
		if err != nil {
			return fmt.Errorf("invalid JSON at offset %d: %w", s.i, ErrMalformedBody)
		}
		if done {
			return nil
		}
	}
}

// textOf returns a raw JSON string, number or boolean as the text a
// provider signs: a string without its quotes (decoded when it holds
// escapes), anything else as written. Absent and null are "". The
// result may share raw's bytes: it is for hashing and for [newItem],
// which copies it.
func textOf(raw []byte) (string, error) {
	switch {
	case raw == nil || string(raw) == "null":
		return "", nil
	case raw[0] == '"' && bytes.IndexByte(raw, '\\') < 0:
		return unsafeString(raw[1 : len(raw)-1]), nil
	case raw[0] == '"':
		return stringMember(raw)
	case raw[0] == '{' || raw[0] == '[':
		return "", fmt.Errorf("want a string or number: %w", ErrMalformedBody)
	}
	return unsafeString(raw), nil
}

// ItemEnvelope is the queue message of a preset's item: one JSON object
// holding the provider, the identity and the raw item, so that payload
// mappings (JSON pointers such as /item/data/object/amount) apply to
// every provider alike. A body that is not JSON (Braintree's XML) is
// held as a JSON string.
type ItemEnvelope struct {
	Provider string `json:"provider"`
	ID       string `json:"id"`
	// Type is the provider's name for the kind of event. GitHub's and
	// Shopify's come from a header (X-GitHub-Event, X-Shopify-Topic)
	// that no signature covers: it is for reading, and must decide
	// nothing the signed item does not confirm.
	Type string `json:"type,omitempty"`
	// HeaderID is the event ID a provider sent in a header that no
	// signature covers (X-GitHub-Delivery, X-Shopify-Event-Id,
	// X-Razorpay-Event-Id), for operators to find the delivery at the
	// provider. Anyone who holds a delivery can send it again under
	// another one: it is never the identity, which is ID.
	HeaderID string          `json:"header_id,omitempty"`
	Item     json.RawMessage `json:"item"`
	// Fetch is true for an item whose object the worker fetches before
	// acting on it: an untrusted one (Mollie, PayPal), or one that does
	// not carry the amount (GoCardless).
	Fetch bool `json:"fetch,omitempty"`
}

// newItem builds an item and its [ItemEnvelope] in one allocation. The
// identity is idParts joined by idSep and the type typParts joined by
// typSep; both are views of the payload, which nothing writes to again,
// so the parts may share the body's bytes. item must be valid JSON.
func newItem(provider Scheme, idParts []string, idSep byte, typParts []string, typSep byte, item []byte, fetch bool) (Item, error) {
	return newItemWith(provider, idParts, idSep, typParts, typSep, item, fetch, "")
}

// newItemWith is [newItem] with the envelope's header_id set to headerID
// when it is not "".
func newItemWith(provider Scheme, idParts []string, idSep byte, typParts []string, typSep byte, item []byte, fetch bool, headerID string) (Item, error) {
	if rawLen(typParts) > maxTypeLen {
		return Item{}, fmt.Errorf("event type longer than %d bytes: %w", maxTypeLen, ErrMalformedBody)
	}
	item = bytes.TrimSpace(item)
	n := len(`{"provider":"","id":,"type":,"header_id":,"item":,"fetch":true}`) + len(provider) + joinedLen(idParts) + joinedLen(typParts) + len(item)
	if headerID != "" {
		n += joinedLen([]string{headerID})
	}
	b := make([]byte, 0, n)
	b = append(b, `{"provider":"`...)
	b = append(b, provider...)
	b = append(b, `","id":`...)
	idStart := len(b) + 1
	b = appendJoined(b, idParts, idSep)
	idEnd := len(b) - 1
	typStart, typEnd := 0, 0
	if joinedLen(typParts) > 2 {
		b = append(b, `,"type":`...)
		typStart = len(b) + 1
		b = appendJoined(b, typParts, typSep)
		typEnd = len(b) - 1
	}
	if headerID != "" {
		b = append(b, `,"header_id":`...)
		b = appendJoined(b, []string{headerID}, 0)
	}
	b = append(b, `,"item":`...)
	b = append(b, item...)
	if fetch {
		b = append(b, `,"fetch":true`...)
	}
	b = append(b, '}')
	it := Item{Payload: b, EventID: unsafeString(b[idStart:idEnd]), Type: unsafeString(b[typStart:typEnd])}
	// An escape in the payload is not in the value: then copy the value.
	if idEnd-idStart != joinedLen(idParts)-2 || rawLen(idParts) != idEnd-idStart {
		it.EventID = strings.Join(idParts, string(idSep))
	}
	if typEnd-typStart != rawLen(typParts) && rawLen(typParts) > 0 {
		it.Type = strings.Join(typParts, string(typSep))
	}
	if err := checkEventID(it.EventID); err != nil {
		return Item{}, err
	}
	return it, nil
}

// joinedLen is the length of the JSON string appendJoined writes: the
// parts, their separators and the quotes, with every escape it may need.
func joinedLen(parts []string) int {
	n := 2
	for i, p := range parts {
		if i > 0 {
			n++
		}
		for j := 0; j < len(p); j++ {
			n += escapedLen(p[j])
		}
	}
	return n
}

// rawLen is the length of the parts joined, unescaped.
func rawLen(parts []string) int {
	n := max(len(parts)-1, 0)
	for _, p := range parts {
		n += len(p)
	}
	return n
}

// appendJoined appends parts joined by sep as one JSON string.
func appendJoined(b []byte, parts []string, sep byte) []byte {
	b = append(b, '"')
	for i, p := range parts {
		if i > 0 {
			b = appendEscaped(b, sep)
		}
		for j := 0; j < len(p); j++ {
			b = appendEscaped(b, p[j])
		}
	}
	return append(b, '"')
}

// escapedLen is how many bytes appendEscaped writes for c.
func escapedLen(c byte) int {
	switch {
	case c == '"' || c == '\\':
		return 2
	case c < 0x20 || c == 0x7f:
		return 6
	}
	return 1
}

// appendEscaped appends one byte of a JSON string: '"' and '\\' with a
// backslash, control bytes as \u00XX, the rest (UTF-8 included) as is.
func appendEscaped(b []byte, c byte) []byte {
	const hexDigits = "0123456789abcdef"
	switch escapedLen(c) {
	case 2:
		return append(b, '\\', c)
	case 6:
		return append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
	}
	return append(b, c)
}
