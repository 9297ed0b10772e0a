package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
	"unsafe"
)

// maxEventIDLen bounds an event ID, which becomes part of storage keys.
const maxEventIDLen = 255

// Envelope is the common outer shape of a webhook body.
type Envelope struct {
	// ID is the body's "id" member.
	ID string
	// Type is the body's "type" member, such as "payment.succeeded".
	Type string
	// CreatedAt is when the provider says the event happened: "created" in
	// Unix seconds, else "timestamp" or "created_at" in RFC 3339. It is zero
	// when none is present or none parses.
	CreatedAt time.Time
	// Data is the body's "data" member as sent, or nil. It shares the
	// body's bytes, so it stays valid only while the body is not modified.
	Data json.RawMessage
}

// ParseEnvelope parses a verified body. It reports [ErrMalformedBody] unless
// body is a JSON object whose id and type, when present, are strings, and
// [ErrMissingEventID] when it has no id. Call it only after verification.
func ParseEnvelope(body []byte) (Envelope, error) {
	return parseEnvelope(body, true)
}

// envelopeMembers are the top-level members an envelope reads. They are
// matched by exact name, as RFC 8259 and JSON pointers read them, so that
// a worker's /id reads the same value as the scanner; a member spelled
// like one of them in another case (or with a letter that case folding
// turns into one, such as U+017F) is refused, because encoding/json would
// read it as the member.
var envelopeMembers = [...]string{"id", "type", "created", "timestamp", "created_at", "data"}

const (
	memberID = iota
	memberType
	memberCreated
	memberTimestamp
	memberCreatedAt
	memberData
)

// parseEnvelope validates body as one JSON object and reads its envelope
// members in a single pass, without decoding anything else. A top-level
// member that appears twice is refused rather than resolved, since parsers
// disagree on which one wins.
func parseEnvelope(body []byte, needID bool) (Envelope, error) {
	s := scanner{b: body}
	s.skipSpace()
	if s.i >= len(body) || body[s.i] != '{' {
		return Envelope{}, fmt.Errorf("want a JSON object: %w", ErrMalformedBody)
	}
	var raw [len(envelopeMembers)][]byte
	var names memberNames
	var refused *FieldError
	err := s.object(func(key []byte, escaped bool, value []byte) error {
		key, err := memberKey(key, escaped)
		if err != nil {
			return err
		}
		if names.add(key) {
			refused = &FieldError{Field: boundedName(key), Reason: "member given twice"}
			return errJSON
		}
		m, exact := envelopeMember(key)
		switch {
		case m < 0:
		case !exact:
			refused = &FieldError{Field: boundedName(key), Reason: fmt.Sprintf("member names are exact: want %q", envelopeMembers[m])}
			return errJSON
		default:
			raw[m] = value
		}
		return nil
	})
	if refused != nil {
		return Envelope{}, refused
	}
	if err == nil {
		s.skipSpace()
		if s.i != len(body) {
			err = errJSON
		}
	}
	if err != nil {
		return Envelope{}, fmt.Errorf("invalid JSON at offset %d: %w", s.i, ErrMalformedBody)
	}
	var env Envelope
	if env.ID, err = stringMember(raw[memberID]); err != nil {
		return Envelope{}, fmt.Errorf("member \"id\": %w", err)
	}
	if env.Type, err = stringMember(raw[memberType]); err != nil {
		return Envelope{}, fmt.Errorf("member \"type\": %w", err)
	}
	if needID {
		if env.ID == "" {
			return Envelope{}, ErrMissingEventID
		}
		if err := checkEventID(env.ID); err != nil {
			return Envelope{}, fmt.Errorf("id: %w", ErrMalformedBody)
		}
	}
	if raw[memberData] != nil {
		env.Data = json.RawMessage(raw[memberData])
	}
	env.CreatedAt = firstTime(raw[memberCreated], raw[memberTimestamp], raw[memberCreatedAt])
	return env, nil
}

// envelopeMember returns the envelope member key names (-1 for none) and
// whether key spells it exactly.
func envelopeMember(key []byte) (int, bool) {
	for m, name := range envelopeMembers {
		if string(key) == name {
			return m, true
		}
	}
	for m, name := range envelopeMembers {
		if foldEqual(key, name) {
			return m, false
		}
	}
	return -1, false
}

// foldEqual reports whether key and name are equal when compared as
// encoding/json compares struct fields: each letter upper-cased after
// lower-casing it, so that U+017F (long s) folds like 's' and U+212A
// (Kelvin sign) like 'k'. It does not allocate.
func foldEqual(key []byte, name string) bool {
	i, j := 0, 0
	for i < len(key) && j < len(name) {
		r, n := utf8.DecodeRune(key[i:])
		q, m := utf8.DecodeRuneInString(name[j:])
		if foldRune(r) != foldRune(q) {
			return false
		}
		i, j = i+n, j+m
	}
	return i == len(key) && j == len(name)
}

func foldRune(r rune) rune {
	if r < utf8.RuneSelf {
		if 'a' <= r && r <= 'z' {
			r -= 'a' - 'A'
		}
		return r
	}
	return unicode.ToUpper(unicode.ToLower(r))
}

// memberNames remembers the top-level member names of one object: the
// first few in place (they share the body's bytes), the rest in a map.
type memberNames struct {
	list [16][]byte
	n    int
	set  map[string]struct{}
}

// add records name and reports whether it was there already.
func (n *memberNames) add(name []byte) bool {
	for _, seen := range n.list[:n.n] {
		if bytes.Equal(seen, name) {
			return true
		}
	}
	if n.n < len(n.list) {
		n.list[n.n] = name
		n.n++
		return false
	}
	if n.set == nil {
		n.set = map[string]struct{}{}
	}
	if _, ok := n.set[string(name)]; ok {
		return true
	}
	n.set[string(name)] = struct{}{}
	return false
}

// boundedName returns at most maxFieldName bytes of a member name.
func boundedName(key []byte) string {
	if len(key) > maxFieldName {
		return strings.ToValidUTF8(string(key[:maxFieldName]), "") + "..."
	}
	return strings.ToValidUTF8(string(key), "\ufffd")
}

// stringMember reads a member that must be a JSON string or null (or
// absent, for nil).
func stringMember(v []byte) (string, error) {
	switch {
	case v == nil || string(v) == "null":
		return "", nil
	case v[0] != '"':
		return "", fmt.Errorf("want a string: %w", ErrMalformedBody)
	case bytes.IndexByte(v, '\\') < 0:
		return string(v[1 : len(v)-1]), nil
	}
	var out string
	if err := json.Unmarshal(v, &out); err != nil {
		return "", fmt.Errorf("want a string: %w", ErrMalformedBody)
	}
	return out, nil
}

// jsonProblem names what kind of JSON error err is, without its text.
func jsonProblem(err error) string {
	switch e := err.(type) {
	case *json.SyntaxError:
		return "invalid JSON at offset " + strconv.FormatInt(e.Offset, 10)
	case *json.UnmarshalTypeError:
		return "member " + strconv.Quote(e.Field) + " has JSON type " + e.Value
	default:
		return "invalid JSON"
	}
}

// firstTime returns the first of the raw members that holds a time: a JSON
// number of Unix seconds, or a string in RFC 3339.
func firstTime(members ...[]byte) time.Time {
	for _, m := range members {
		if len(m) == 0 {
			continue
		}
		if m[0] == '"' {
			if bytes.IndexByte(m, '\\') >= 0 {
				continue // no RFC 3339 time needs an escape
			}
			// time.Parse keeps no part of its input for a UTC or
			// numeric-offset time, so the text need not be copied.
			if t, err := time.Parse(time.RFC3339Nano, unsafeString(m[1:len(m)-1])); err == nil {
				return t.UTC()
			}
			continue
		}
		if secs, ok := unixSeconds(m); ok {
			return time.Unix(secs, 0).UTC()
		}
	}
	return time.Time{}
}

// unixSeconds reads 1 to 11 digits with no sign, fraction or exponent: a
// positive count of seconds before the year 5138.
func unixSeconds(m []byte) (int64, bool) {
	if len(m) == 0 || len(m) > 11 {
		return 0, false
	}
	var n int64
	for _, c := range m {
		if !isDigit(c) {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, n > 0 && n < 1e11
}

// unsafeString views b as a string without copying it; b must not change
// while the string is in use.
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// checkEventID reports whether id is a usable event ID: 1 to 255 bytes of
// printable ASCII without spaces.
func checkEventID(id string) error {
	if id == "" {
		return ErrMissingEventID
	}
	if len(id) > maxEventIDLen {
		return fmt.Errorf("event id longer than %d bytes: %w", maxEventIDLen, ErrMalformedBody)
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] > '~' {
			return fmt.Errorf("event id has a byte outside printable ASCII: %w", ErrMalformedBody)
		}
	}
	return nil
}

// checkHeaderEventID checks a webhook-id header. Beyond [checkEventID] it
// refuses '.', the delimiter of the signed content, so that no two
// (id, timestamp, body) triples sign the same bytes.
func checkHeaderEventID(id string) error {
	if checkEventID(id) != nil || strings.Contains(id, ".") {
		return fmt.Errorf("%s header: want 1 to %d printable ASCII bytes without '.': %w", HeaderWebhookID, maxEventIDLen, ErrMalformedHeader)
	}
	return nil
}
