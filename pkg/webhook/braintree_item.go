package webhook

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Braintree's XML is held in the queue message as a JSON string. The
// string escapes only what JSON must: '"' and '\' with a backslash, and
// the line breaks and tabs XML allows as \n, \r and \t; every other
// character is as it came. An XML document is made of XML's characters
// alone (#x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to
// #x10FFFF, in UTF-8), so no character takes more than two bytes, and
// since bt_payload carries the XML as base64, the item is at most 3/2 of
// the body. encoding/json, which builds before used, also writes '<',
// '>' and '&' as \u003c, \u003e and \u0026, six bytes each: the message
// of a notification came out larger than its body.

// braintreeItem returns the notification's XML as a JSON string, or an
// error wrapping [ErrMalformedBody] when it holds anything but XML's
// characters in UTF-8.
func braintreeItem(text []byte) ([]byte, error) {
	n := 2
	for _, c := range text {
		n++
		if c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' {
			n++
		}
	}
	b := make([]byte, 0, n)
	b = append(b, '"')
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRune(text[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return nil, fmt.Errorf("bt_payload: XML that is not UTF-8: %w", ErrMalformedBody)
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
		case r == '\n':
			b = append(b, '\\', 'n')
		case r == '\r':
			b = append(b, '\\', 'r')
		case r == '\t':
			b = append(b, '\\', 't')
		case r < 0x20 || (r >= 0xD800 && r <= 0xDFFF) || r == 0xFFFE || r == 0xFFFF:
			return nil, fmt.Errorf("bt_payload: XML with the character U+%04X, which XML does not allow: %w", r, ErrMalformedBody)
		default:
			b = append(b, text[i:i+size]...)
		}
		i += size
	}
	return append(b, '"'), nil
}

// braintreeLegacyItem is the item builds before [braintreeItem] made of
// the same XML, with encoding/json's HTML escaping. A record of that
// form, under the same identity, is the same event
// ([Item.LegacyPayload]).
func braintreeLegacyItem(text []byte) []byte {
	item, _ := json.Marshal(string(text)) // a string always encodes
	return item
}
