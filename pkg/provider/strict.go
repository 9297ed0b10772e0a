package provider

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode"
	"unicode/utf8"
)

// maxStrictDepth bounds the nesting of a strictly decoded value.
const maxStrictDepth = 64

// kind is the JSON type of a [value].
type kind int

const (
	kindNull kind = iota
	kindBool
	kindNumber
	kindString
	kindObject
	kindArray
)

func (k kind) String() string {
	return [...]string{"null", "a boolean", "a number", "a string", "an object", "an array"}[k]
}

// value is one strictly decoded JSON value. A number keeps its literal
// text, so that 10.0 and 1e1 are not mistaken for the integer 10.
type value struct {
	kind    kind
	text    string // a string's value, or a number's literal
	members []member
	items   []value
	// ownDup names a member given twice in this object; dup is the path,
	// relative to this value, of the first member given twice anywhere in
	// it. The first of two members is kept.
	ownDup string
	dup    string
}

type member struct {
	name string
	val  value
}

// errStrict is a syntax problem of the strict decoder; callers wrap it.
var errStrict = errors.New("invalid JSON")

// decodeStrict decodes one JSON value from b, with nothing after it. Member
// names are read exactly, as RFC 8259 and JSON pointers read them; a
// member given twice in one object is marked (see value.dup), and refused
// by [value.fields], since decoders disagree on which one wins.
func decodeStrict(b []byte) (value, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := readValue(dec, 0)
	if err != nil {
		return value{}, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return value{}, fmt.Errorf("text after the value: %w", errStrict)
	}
	return v, nil
}

func readValue(dec *json.Decoder, depth int) (value, error) {
	tok, err := dec.Token()
	if err != nil {
		return value{}, fmt.Errorf("%s: %w", jsonOffset(dec), errStrict)
	}
	switch t := tok.(type) {
	case nil:
		return value{kind: kindNull}, nil
	case bool:
		return value{kind: kindBool}, nil
	case json.Number:
		return value{kind: kindNumber, text: string(t)}, nil
	case string:
		return value{kind: kindString, text: t}, nil
	case json.Delim:
		if depth >= maxStrictDepth {
			return value{}, fmt.Errorf("nested deeper than %d: %w", maxStrictDepth, errStrict)
		}
		if t == '{' {
			return readObject(dec, depth+1)
		}
		return readArray(dec, depth+1)
	}
	return value{}, errStrict
}

func readObject(dec *json.Decoder, depth int) (value, error) {
	v := value{kind: kindObject}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return value{}, fmt.Errorf("%s: %w", jsonOffset(dec), errStrict)
		}
		name, _ := tok.(string)
		val, err := readValue(dec, depth)
		if err != nil {
			return value{}, err
		}
		switch {
		case seen[name]:
			if v.ownDup == "" {
				v.ownDup = name
			}
			if v.dup == "" {
				v.dup = name
			}
			continue
		case val.dup != "" && v.dup == "":
			v.dup = join(name, val.dup)
		}
		seen[name] = true
		v.members = append(v.members, member{name, val})
	}
	if _, err := dec.Token(); err != nil { // }
		return value{}, fmt.Errorf("%s: %w", jsonOffset(dec), errStrict)
	}
	return v, nil
}

func readArray(dec *json.Decoder, depth int) (value, error) {
	v := value{kind: kindArray}
	for i := 0; dec.More(); i++ {
		item, err := readValue(dec, depth)
		if err != nil {
			return value{}, err
		}
		if item.dup != "" && v.dup == "" {
			v.dup = fmt.Sprintf("[%d]", i) + dotted(item.dup)
		}
		v.items = append(v.items, item)
	}
	if _, err := dec.Token(); err != nil { // ]
		return value{}, fmt.Errorf("%s: %w", jsonOffset(dec), errStrict)
	}
	return v, nil
}

func jsonOffset(dec *json.Decoder) string {
	return fmt.Sprintf("at offset %d", dec.InputOffset())
}

// join appends a member name (or a relative path) to a field path.
func join(path, name string) string {
	switch {
	case path == "":
		return name
	case name != "" && name[0] == '[':
		return path + name
	}
	return path + "." + name
}

// dotted prefixes a relative member path with '.' unless it is an index.
func dotted(rel string) string {
	if rel != "" && rel[0] == '[' {
		return rel
	}
	return "." + rel
}

// fields reads the members of an object that a schema knows. A member
// given twice anywhere in v is refused. A member
// spelled like a known one but not exactly (another case, or a letter such
// as U+017F that case folding turns into one) is refused: encoding/json
// would read it as the known member, and a JSON pointer would not.
func (v value) fields(path string, known ...string) (map[string]value, error) {
	if v.dup != "" {
		return nil, &FieldError{Field: join(path, v.dup), Reason: "member given twice"}
	}
	out := make(map[string]value, len(known))
	for _, m := range v.members {
		for _, name := range known {
			switch {
			case m.name == name:
				out[name] = m.val
			case foldEqual(m.name, name):
				return nil, &FieldError{Field: join(path, m.name),
					Reason: fmt.Sprintf("member names are exact: want %q", name)}
			}
		}
	}
	return out, nil
}

// foldEqual reports whether a and b are equal under the case folding of
// encoding/json's field matching.
func foldEqual(a, b string) bool {
	return bytes.Equal(fold(a), fold(b))
}

// fold maps a name to the form encoding/json compares struct fields in:
// each letter in upper case after lower-casing it, so that U+017F (long s)
// and U+212A (Kelvin sign) fold like 's' and 'k'.
func fold(s string) []byte {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		if r < utf8.RuneSelf {
			if 'a' <= r && r <= 'z' {
				r -= 'a' - 'A'
			}
			out = append(out, byte(r))
			continue
		}
		out = utf8.AppendRune(out, unicode.ToUpper(unicode.ToLower(r)))
	}
	return out
}
