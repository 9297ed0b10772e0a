package webhook

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
)

// sigEncoding is how a signature header spells its MAC.
type sigEncoding int

const (
	encHex sigEncoding = iota
	encBase64
)

// decodeSum decodes one SHA-256-sized MAC, without allocating; ok is
// false for anything else.
func decodeSum(value string, enc sigEncoding) (sum [sha256.Size]byte, ok bool) {
	if enc == encBase64 {
		return decodeStandardMAC(value)
	}
	if len(value) != 2*sha256.Size {
		return sum, false
	}
	if _, err := hex.Decode(sum[:], stringBytes(value)); err != nil {
		return sum, false
	}
	return sum, true
}

// headerMAC is a signature header that holds one MAC of the signed parts.
type headerMAC struct {
	name   string
	prefix string // such as GitHub's "sha256="
	enc    sigEncoding
}

// check verifies the header's MAC of parts against keys.
func (m headerMAC) check(h Headers, keys []*macKey, parts ...[]byte) error {
	value := strings.TrimSpace(h.Get(m.name))
	if value == "" {
		return fmt.Errorf("%s header: %w", m.name, ErrMissingSignature)
	}
	value, ok := strings.CutPrefix(value, m.prefix)
	if !ok {
		return fmt.Errorf("%s header: want %q and the signature: %w", m.name, m.prefix, ErrMalformedHeader)
	}
	sum, ok := decodeSum(value, m.enc)
	if !ok {
		return ErrBadSignature
	}
	if !matches(keys, sum[:], parts...) {
		return ErrBadSignature
	}
	return nil
}

// rawKey is the MAC key of a secret used as it is.
func rawKey(secret string) (*macKey, error) { return newMACKey([]byte(secret)), nil }

// bodyFields reads a single-event JSON body's identity, type and time
// members, named in that order; an empty name is not read.
func bodyFields(body []byte, idName, typeName, timeName string) (id, typ string, ts time.Time, err error) {
	var raw [3][]byte
	if err := readMembers(body, []string{idName, typeName, timeName}, raw[:]); err != nil {
		return "", "", time.Time{}, err
	}
	if idName != "" {
		if id, err = textOf(raw[0]); err != nil {
			return "", "", time.Time{}, fmt.Errorf("member %q: %w", idName, err)
		}
		if err := checkEventID(id); err != nil {
			return "", "", time.Time{}, fmt.Errorf("member %q: %w", idName, err)
		}
	}
	if typ, err = textOf(raw[1]); err != nil {
		return "", "", time.Time{}, fmt.Errorf("member %q: %w", typeName, err)
	}
	return id, typ, firstTime(raw[2]), nil
}

// single is the delivery of one event.
func single(provider Scheme, id, typ string, ts time.Time, item []byte) (Delivery, error) {
	it, err := newItem(provider, []string{id}, 0, []string{typ}, 0, item, false)
	if err != nil {
		return Delivery{}, err
	}
	it.Timestamp = ts
	return Delivery{Items: []Item{it}}, nil
}

// singleSigned is [single] for a preset whose signed body holds the
// event's time and that no replay window bounds: the item's time, when
// there is one, is marked signed.
func singleSigned(provider Scheme, id, typ string, ts time.Time, item []byte) (Delivery, error) {
	d, err := single(provider, id, typ, ts, item)
	if err == nil {
		d.Items[0].TimeSigned = !ts.IsZero()
	}
	return d, err
}

// checkJSON reports a body that is not one JSON value.
func checkJSON(body []byte) error {
	s := scanner{b: body}
	if err := s.value(); err != nil {
		return fmt.Errorf("invalid JSON at offset %d: %w", s.i, ErrMalformedBody)
	}
	s.skipSpace()
	if s.i != len(body) {
		return fmt.Errorf("invalid JSON at offset %d: %w", s.i, ErrMalformedBody)
	}
	return nil
}

// signHex and signBase64 are the MAC of parts under secret, for tests and
// senders.
func signHex(secret []byte, parts ...[]byte) string {
	return hex.EncodeToString(macOf(secret, parts...))
}

func signBase64(secret []byte, parts ...[]byte) string {
	return base64.StdEncoding.EncodeToString(macOf(secret, parts...))
}

func macOf(secret []byte, parts ...[]byte) []byte {
	st := newMACKey(secret).get()
	return st.of(parts...)
}
