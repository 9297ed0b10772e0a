package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
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
	// Data is the body's "data" member as sent, or nil.
	Data json.RawMessage
}

// ParseEnvelope parses a verified body. It reports [ErrMalformedBody] unless
// body is a JSON object whose id and type, when present, are strings, and
// [ErrMissingEventID] when it has no id. Call it only after verification.
func ParseEnvelope(body []byte) (Envelope, error) {
	return parseEnvelope(body, true)
}

// rawEnvelope keeps the time members raw, since providers differ in their
// types.
type rawEnvelope struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	Created   json.RawMessage `json:"created"`
	Timestamp json.RawMessage `json:"timestamp"`
	CreatedAt json.RawMessage `json:"created_at"`
	Data      json.RawMessage `json:"data"`
}

func parseEnvelope(body []byte, needID bool) (Envelope, error) {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return Envelope{}, fmt.Errorf("want a JSON object: %w", ErrMalformedBody)
	}
	var raw rawEnvelope
	if err := json.Unmarshal(body, &raw); err != nil {
		// The decoder's message may quote body text; keep only the kind.
		return Envelope{}, fmt.Errorf("%s: %w", jsonProblem(err), ErrMalformedBody)
	}
	if needID {
		if raw.ID == "" {
			return Envelope{}, ErrMissingEventID
		}
		if err := checkEventID(raw.ID); err != nil {
			return Envelope{}, fmt.Errorf("id: %w", ErrMalformedBody)
		}
	}
	env := Envelope{ID: raw.ID, Type: raw.Type, Data: raw.Data}
	env.CreatedAt = firstTime(raw.Created, raw.Timestamp, raw.CreatedAt)
	return env, nil
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
func firstTime(members ...json.RawMessage) time.Time {
	for _, m := range members {
		if len(m) == 0 {
			continue
		}
		if m[0] == '"' {
			var s string
			if json.Unmarshal(m, &s) != nil {
				continue
			}
			if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
				return t.UTC()
			}
			continue
		}
		if secs, err := strconv.ParseInt(string(m), 10, 64); err == nil && secs > 0 && secs < 1e11 {
			return time.Unix(secs, 0).UTC()
		}
	}
	return time.Time{}
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
