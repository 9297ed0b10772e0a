package provider

import (
	"strconv"
	"strings"
)

// JSON is a body read the way the usage readers read one: member names
// exact, a member given twice marked rather than resolved, numbers kept as
// written (so that 10.0 and 1e1 are not taken for the integer 10). Other
// usage formats (CloudEvents) read their bodies with it, so that every
// format refuses what [ParseUsageEvent] refuses.
type JSON struct{ v value }

// JSONMember is one member of an object, in the order written.
type JSONMember struct {
	Name  string
	Value JSON
}

// ReadJSON decodes one JSON value from b, with nothing after it, nested at
// most 64 deep. A syntax error is a [*FieldError] without a field.
func ReadJSON(b []byte) (JSON, error) {
	v, err := decodeStrict(b)
	if err != nil {
		return JSON{}, &FieldError{Reason: err.Error()}
	}
	return JSON{v}, nil
}

// The kinds [JSON.Kind] reports.
const (
	JSONNull   = "null"
	JSONBool   = "boolean"
	JSONNumber = "number"
	JSONString = "string"
	JSONObject = "object"
	JSONArray  = "array"
)

// Kind is the JSON type of j: [JSONNull], [JSONBool], [JSONNumber],
// [JSONString], [JSONObject] or [JSONArray].
func (j JSON) Kind() string {
	return [...]string{JSONNull, JSONBool, JSONNumber, JSONString, JSONObject, JSONArray}[j.v.kind]
}

// Describe names the kind for a message: "a string", "an object".
func (j JSON) Describe() string { return j.v.kind.String() }

// Text is a string's value or a number's literal; "" for other kinds.
func (j JSON) Text() string { return j.v.text }

// Members are an object's members in the order written, the first of a
// name given twice only.
func (j JSON) Members() []JSONMember {
	out := make([]JSONMember, len(j.v.members))
	for i, m := range j.v.members {
		out[i] = JSONMember{Name: m.name, Value: JSON{m.val}}
	}
	return out
}

// Items are an array's items.
func (j JSON) Items() []JSON {
	out := make([]JSON, len(j.v.items))
	for i, it := range j.v.items {
		out[i] = JSON{it}
	}
	return out
}

// Duplicate is the path, relative to j, of the first member given twice
// anywhere in j ("data.units", "[2].id"); "" when there is none.
func (j JSON) Duplicate() string { return j.v.dup }

// Member returns the member named exactly name.
func (j JSON) Member(name string) (JSON, bool) {
	for _, m := range j.v.members {
		if m.name == name {
			return JSON{m.val}, true
		}
	}
	return JSON{}, false
}

// Pointer follows a JSON pointer (RFC 6901) from j. Member names are
// matched exactly; ok is false when a step does not exist. A step that
// exists only under another spelling (another case, or a letter case
// folding turns into one) is reported in near, so that a caller can refuse
// it rather than read it as absent.
func (j JSON) Pointer(ptr string) (v JSON, ok bool, near string) {
	if ptr == "" {
		return j, true, ""
	}
	cur := j.v
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch cur.kind {
		case kindObject:
			next, found, other := cur.member(tok)
			if !found {
				return JSON{}, false, other
			}
			cur = next
		case kindArray:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(cur.items) || (len(tok) > 1 && tok[0] == '0') {
				return JSON{}, false, ""
			}
			cur = cur.items[i]
		default:
			return JSON{}, false, ""
		}
	}
	return JSON{cur}, true, ""
}

// member returns the member named exactly name, or the name of one
// spelled like it under encoding/json's case folding.
func (v value) member(name string) (value, bool, string) {
	near := ""
	for _, m := range v.members {
		switch {
		case m.name == name:
			return m.val, true, ""
		case near == "" && foldEqual(m.name, name):
			near = m.name
		}
	}
	return value{}, false, near
}
