package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
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

// envelopeMembers are the top-level members an envelope reads, matched
// without regard to case as encoding/json matches struct fields, so that a
// worker decoding the same body with encoding/json reads the same values.
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
// members in a single pass, without decoding anything else: a member that
// appears twice (in any case) is refused rather than resolved, since
// parsers disagree on which one wins.
func parseEnvelope(body []byte, needID bool) (Envelope, error) {
	s := scanner{b: body}
	s.skipSpace()
	if s.i >= len(body) || body[s.i] != '{' {
		return Envelope{}, fmt.Errorf("want a JSON object: %w", ErrMalformedBody)
	}
	var raw [len(envelopeMembers)][]byte
	repeated := -1
	err := s.object(func(key []byte, escaped bool, value []byte) error {
		if escaped {
			var k string
			if json.Unmarshal(append(append([]byte{'"'}, key...), '"'), &k) != nil {
				return errJSON
			}
			key = []byte(k)
		}
		for m, name := range envelopeMembers {
			if len(key) == len(name) && bytes.EqualFold(key, stringBytes(name)) {
				if raw[m] != nil {
					repeated = m
					return errJSON
				}
				raw[m] = value
			}
		}
		return nil
	})
	if repeated >= 0 {
		return Envelope{}, fmt.Errorf("member %q repeated: %w", envelopeMembers[repeated], ErrMalformedBody)
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
