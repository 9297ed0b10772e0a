package webhook

import (
	"encoding/binary"
	"errors"
)

// errJSON is a failure of the envelope scanner; it never leaves the package
// unwrapped.
var errJSON = errors.New("webhook: invalid JSON")

// maxJSONDepth bounds nesting, as encoding/json does.
const maxJSONDepth = 10000

// scanner validates JSON and finds the members of the top-level object
// without building any value: strings are scanned eight bytes at a time.
type scanner struct {
	b     []byte
	i     int
	depth int
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (s *scanner) skipSpace() {
	for s.i < len(s.b) && isSpace(s.b[s.i]) {
		s.i++
	}
}

const (
	lows  = 0x0101010101010101
	highs = 0x8080808080808080
)

// special reports whether any byte of w is '"', '\\' or a control character.
func special(w uint64) bool {
	quote := w ^ (lows * '"')
	slash := w ^ (lows * '\\')
	return ((quote-lows)&^quote|(slash-lows)&^slash|(w-lows*0x20)&^w)&highs != 0
}

// str scans a string whose opening quote is at s.i. It returns the bytes
// between the quotes and whether they hold an escape.
func (s *scanner) str() (raw []byte, escaped bool, err error) {
	start := s.i + 1
	i := start
	for {
		for i+8 <= len(s.b) && !special(binary.LittleEndian.Uint64(s.b[i:])) {
			i += 8
		}
		if i >= len(s.b) {
			return nil, false, errJSON
		}
		switch c := s.b[i]; {
		case c == '"':
			s.i = i + 1
			return s.b[start:i], escaped, nil
		case c == '\\':
			escaped = true
			if i+1 >= len(s.b) {
				return nil, false, errJSON
			}
			switch s.b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(s.b) {
					return nil, false, errJSON
				}
				for _, h := range s.b[i+2 : i+6] {
					if !isHex(h) {
						return nil, false, errJSON
					}
				}
				i += 6
			default:
				return nil, false, errJSON
			}
		case c < 0x20:
			return nil, false, errJSON
		default:
			i++
		}
	}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// number scans a JSON number at s.i.
func (s *scanner) number() error {
	b, i := s.b, s.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		return errJSON
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return errJSON
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return errJSON
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	s.i = i
	return nil
}

func (s *scanner) literal(word string) error {
	if len(s.b)-s.i < len(word) || string(s.b[s.i:s.i+len(word)]) != word {
		return errJSON
	}
	s.i += len(word)
	return nil
}

// value scans any JSON value at s.i (after optional space).
func (s *scanner) value() error {
	s.skipSpace()
	if s.i >= len(s.b) {
		return errJSON
	}
	switch c := s.b[s.i]; {
	case c == '{':
		return s.object(nil)
	case c == '[':
		return s.array()
	case c == '"':
		_, _, err := s.str()
		return err
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	default:
		return s.number()
	}
}

func (s *scanner) array() error {
	if s.depth++; s.depth > maxJSONDepth {
		return errJSON
	}
	s.i++ // [
	s.skipSpace()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		s.depth--
		return nil
	}
	for {
		if err := s.value(); err != nil {
			return err
		}
		if done, err := s.separator(']'); done || err != nil {
			return err
		}
	}
}

// separator reads what follows an element of an array or object: ','
// (more follow) or close (the end: done).
func (s *scanner) separator(close byte) (done bool, err error) {
	s.skipSpace()
	if s.i >= len(s.b) {
		return false, errJSON
	}
	switch s.b[s.i] {
	case ',':
		s.i++
		return false, nil
	case close:
		s.i++
		s.depth--
		return true, nil
	}
	return false, errJSON
}

// object scans an object at s.i. For each member, member (if not nil) is
// called with the raw key (without quotes; escaped tells whether it holds
// escapes) and the raw value.
func (s *scanner) object(member func(key []byte, escaped bool, value []byte) error) error {
	if s.depth++; s.depth > maxJSONDepth {
		return errJSON
	}
	s.i++ // {
	s.skipSpace()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		s.depth--
		return nil
	}
	for {
		s.skipSpace()
		if s.i >= len(s.b) || s.b[s.i] != '"' {
			return errJSON
		}
		key, escaped, err := s.str()
		if err != nil {
			return err
		}
		s.skipSpace()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return errJSON
		}
		s.i++
		s.skipSpace()
		start := s.i
		if err := s.value(); err != nil {
			return err
		}
		if member != nil {
			if err := member(key, escaped, s.b[start:s.i]); err != nil {
				return err
			}
		}
		if done, err := s.separator('}'); done || err != nil {
			return err
		}
	}
}
