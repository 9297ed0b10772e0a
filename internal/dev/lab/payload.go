package lab

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/hookline/hookline/internal/paymentworker"
)

// ErrBadPayload reports a payload file the lab cannot send: not JSON, or
// not a shape it can charge from.
var ErrBadPayload = errors.New("lab: bad payload")

// Payload is the body every webhook of a run carries, byte for byte as
// written, but for each event's ID, customer and amount, and the mapping
// the payment worker reads it with. The zero Payload is the lab's own
// small event ([SizedPayload] with size 0).
type Payload struct {
	// Name says what the body is ("testdata/payloads/stripe-invoice-paid.json
	// (Stripe invoice event)").
	Name string
	// Size is the body's length in bytes (each event's differs from it by
	// the length of its values only).
	Size    int
	mapping paymentworker.Mapping
	// parts are the body around its values; values[i] sits between
	// parts[i] and parts[i+1].
	parts  [][]byte
	values []field
}

// field is which of an event's values goes in a slot of the body.
type field int

const (
	fieldID field = iota
	fieldCustomer
	fieldAmount
)

// shapes are the bodies the lab can charge from, tried in order.
var shapes = []struct {
	name    string
	mapping paymentworker.Mapping
}{
	{"hookline event", paymentworker.HooklineMapping},
	{"Stripe invoice event", paymentworker.StripeInvoiceMapping},
	{"Adyen notification", AdyenMapping},
}

// AdyenMapping reads the first item of an Adyen standard notification
// (AUTHORISATION): the shopper's reference as the customer, the amount
// and the PSP reference as the event.
var AdyenMapping = paymentworker.Mapping{
	EventID:     "/notificationItems/0/NotificationRequestItem/pspReference",
	Customer:    "/notificationItems/0/NotificationRequestItem/additionalData/shopperReference",
	Amount:      "/notificationItems/0/NotificationRequestItem/amount/value",
	Currency:    "/notificationItems/0/NotificationRequestItem/amount/currency",
	Description: "/notificationItems/0/NotificationRequestItem/merchantReference",
}

// labEvent is the lab's own event: small, in hookline's shape.
const labEvent = `{"id":"evt_lab","type":"payment.requested","data":{"customer":"cus_lab","amount":1000,"currency":"usd"}}`

// SizedPayload is the lab's own event, padded to size bytes when size is
// larger than it (about 100 bytes).
func SizedPayload(size int) (*Payload, error) {
	name := "lab event"
	if size > 0 {
		name = fmt.Sprintf("lab event padded to %d bytes", size)
	}
	return newPayload(name, []byte(labEvent), size)
}

// LoadPayload reads a webhook body from path, padded to size bytes when
// size is larger than it. It must be one of the shapes the payment worker
// can charge from: hookline's, a Stripe invoice event or an Adyen
// notification.
func LoadPayload(path string, size int) (*Payload, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadPayload, err)
	}
	return newPayload(path, raw, size)
}

// newPayload finds raw's shape and the places of its values, and pads it
// to size.
func newPayload(name string, raw []byte, size int) (*Payload, error) {
	raw = bytes.TrimSpace(raw)
	for _, s := range shapes {
		if _, err := s.mapping.Apply(raw, ""); err != nil {
			continue
		}
		raw, err := pad(raw, size)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrBadPayload, name, err)
		}
		p := &Payload{Name: name + " (" + s.name + ")", Size: len(raw), mapping: s.mapping}
		if err := p.split(raw); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrBadPayload, name, err)
		}
		return p, nil
	}
	return nil, fmt.Errorf("%w: %s is not a body the payment worker can charge from (a hookline event, a Stripe invoice event or an Adyen notification)", ErrBadPayload, name)
}

// pad adds a "padding" member to raw's top-level object so that it is
// size bytes long; a body already that long is left as it is. The padding
// is seeded random letters and digits, which compression barely shrinks:
// a padded body is the costliest body of its size (a real one, such as
// the Stripe fixture, compresses about threefold).
func pad(raw []byte, size int) ([]byte, error) {
	const member = `,"padding":""`
	short := size - len(raw) - len(member)
	if size <= len(raw) {
		return raw, nil
	}
	end := bytes.LastIndexByte(raw, '}')
	if end < 0 {
		return nil, errors.New("not a JSON object")
	}
	var b bytes.Buffer
	b.Write(raw[:end])
	b.WriteString(member[:len(member)-1])
	b.WriteString(noise(max(short, 0)))
	b.WriteString(`"`)
	b.Write(raw[end:])
	return b.Bytes(), nil
}

// noise is n seeded random letters and digits, the same on every call.
func noise(n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}

// split cuts raw around the values of the mapping's event ID, customer
// and amount.
func (p *Payload) split(raw []byte) error {
	want := map[string]field{p.mapping.Customer: fieldCustomer, p.mapping.Amount: fieldAmount}
	if p.mapping.EventID != "" {
		want[p.mapping.EventID] = fieldID
	}
	spans, err := locate(raw, want)
	if err != nil {
		return err
	}
	if len(spans) != len(want) {
		return errors.New("a value of the mapping was not found")
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	at := 0
	for _, s := range spans {
		p.parts = append(p.parts, raw[at:s.start])
		p.values = append(p.values, s.field)
		at = s.end
	}
	p.parts = append(p.parts, raw[at:])
	return nil
}

// body is the webhook of event id, the i-th of its run.
func (p *Payload) body(id string, i int) []byte {
	var b bytes.Buffer
	b.Grow(p.Size + 2*len(id))
	for k, part := range p.parts {
		b.Write(part)
		if k == len(p.values) {
			break
		}
		switch p.values[k] {
		case fieldID:
			b.WriteString(strconv.Quote(id))
		case fieldCustomer:
			b.WriteString(strconv.Quote("cus_" + id))
		case fieldAmount:
			b.WriteString(strconv.Itoa(1000 + (i%50)*10))
		}
	}
	return b.Bytes()
}

// span is where one value lies in a body.
type span struct {
	start, end int
	field      field
}

// locate finds the scalar values at the JSON pointers of want in raw.
func locate(raw []byte, want map[string]field) ([]span, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var spans []span
	if err := walk(dec, raw, "", want, &spans); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("more than one JSON value")
	}
	return spans, nil
}

// walk reads one value at pointer path, recording it if want names it.
func walk(dec *json.Decoder, raw []byte, path string, want map[string]field, spans *[]span) error {
	before := int(dec.InputOffset())
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		for dec.More() {
			key, err := dec.Token()
			if err != nil {
				return err
			}
			k := strings.ReplaceAll(strings.ReplaceAll(key.(string), "~", "~0"), "/", "~1")
			if err := walk(dec, raw, path+"/"+k, want, spans); err != nil {
				return err
			}
		}
		_, err = dec.Token()
		return err
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			if err := walk(dec, raw, path+"/"+strconv.Itoa(i), want, spans); err != nil {
				return err
			}
		}
		_, err = dec.Token()
		return err
	}
	if f, ok := want[path]; ok {
		start := before + len(raw[before:]) - len(bytes.TrimLeft(raw[before:], " \t\r\n:,"))
		*spans = append(*spans, span{start: start, end: int(dec.InputOffset()), field: f})
	}
	return nil
}
