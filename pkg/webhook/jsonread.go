package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"
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
// escapes), anything else as written. Absent and null are "".
func textOf(raw []byte) (string, error) {
	switch {
	case raw == nil || string(raw) == "null":
		return "", nil
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
	Provider string          `json:"provider"`
	ID       string          `json:"id"`
	Type     string          `json:"type,omitempty"`
	Item     json.RawMessage `json:"item"`
	// Fetch is true for an untrusted item (Mollie): the worker fetches
	// the object before acting on it.
	Fetch bool `json:"fetch,omitempty"`
}

// itemPayload builds the [ItemEnvelope] of one item in one allocation.
// item must be valid JSON.
func itemPayload(provider Scheme, id, typ string, item []byte, fetch bool) []byte {
	n := len(`{"provider":"","id":,"type":,"item":,"fetch":true}`) + len(provider) + 2*len(id) + 2*len(typ) + len(item) + 8
	b := make([]byte, 0, n)
	b = append(b, `{"provider":"`...)
	b = append(b, provider...)
	b = append(b, `","id":`...)
	b = appendJSONString(b, id)
	if typ != "" {
		b = append(b, `,"type":`...)
		b = appendJSONString(b, typ)
	}
	b = append(b, `,"item":`...)
	b = append(b, bytes.TrimSpace(item)...)
	if fetch {
		b = append(b, `,"fetch":true`...)
	}
	return append(b, '}')
}

// appendJSONString appends s as a JSON string. Identities and types are
// printable ASCII, so only '"' and '\\' need escapes; anything else is
// escaped as \u00XX.
func appendJSONString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20 || c >= 0x7f:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
