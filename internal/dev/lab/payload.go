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

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/hookline/hookline/internal/paymentworker"
	"github.com/hookline/hookline/pkg/webhook"
)

// ErrBadPayload reports a payload file the lab cannot send: not JSON, or
// not a shape it can charge from.
var ErrBadPayload = errors.New("lab: bad payload")

// Payload is the body every webhook of a run carries, byte for byte as
// written, but for each event's ID, customer, amount and effect key, and
// the mapping the payment worker reads it with. Every event of a payload
// acts under that mapping, each with an effect key of its own, so each is
// one charge. The zero Payload is the lab's own small event
// ([SizedPayload] with size 0).
type Payload struct {
	// Name says what the body is ("testdata/payloads/stripe-invoice-finalized.json
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
	// keyPrefix starts each event's effect key, as the body's own did
	// ("in_" of a Stripe invoice ID).
	keyPrefix string
}

// field is which of an event's values goes in a slot of the body.
type field int

const (
	fieldID field = iota
	fieldCustomer
	fieldAmount
	// fieldEffectKey is the effect key when the mapping reads it from
	// elsewhere than the event ID (a Stripe invoice's ID).
	fieldEffectKey
)

// shapes are the bodies the lab can charge from, tried in order, with a
// body of the shape that acts.
var shapes = []struct {
	name    string
	mapping paymentworker.Mapping
	acting  string
}{
	{"hookline event", paymentworker.HooklineMapping, `a "payment.requested" event (the lab's own, with no --payload)`},
	{"Stripe invoice event", paymentworker.StripeInvoiceMapping, "testdata/payloads/stripe-invoice-finalized.json"},
	{"Adyen notification", AdyenMapping, "testdata/payloads/adyen-authorisation.json"},
}

// adyenItem is where an Adyen standard notification keeps its first item,
// which the adyen preset's queued envelope holds at /item.
const adyenItem = "/notificationItems/0/NotificationRequestItem"

// AdyenMapping reads the first item of an Adyen standard notification
// with the adyen preset's rule ([paymentworker.PresetRule], immediate
// capture): it acts on a successful AUTHORISATION, keyed and charged as
// the preset keys and charges one, with the shopper's reference as the
// customer and the PSP reference as the event. The lab signs the body
// with the payments source's scheme, so the rule's pointers into the
// preset's envelope (/item/...) point into the notification instead.
var AdyenMapping = adyenMapping()

func adyenMapping() paymentworker.Mapping {
	rule, _ := paymentworker.PresetRule(webhook.SchemeAdyen, paymentworker.CaptureImmediate)
	at := func(ptr string) string {
		if rest, ok := strings.CutPrefix(ptr, "/item/"); ok {
			return adyenItem + "/" + rest
		}
		return ptr
	}
	m := paymentworker.Mapping{
		EventID:      adyenItem + "/pspReference",
		Customer:     adyenItem + "/additionalData/shopperReference",
		Amount:       at(rule.Amount),
		Currency:     at(rule.Currency),
		AmountFormat: rule.AmountFormat,
		Description:  adyenItem + "/merchantReference",
		EffectKey:    at(rule.EffectKey),
		ActWhen:      map[string][]string{},
	}
	for ptr, values := range rule.ActWhen {
		m.ActWhen[at(ptr)] = values
	}
	return m
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
// can charge from (hookline's, a Stripe invoice event or an Adyen
// notification) and an event that shape's rule acts on: a body the
// worker would acknowledge with no charge (a Stripe invoice.paid, which
// the Stripe invoice rule does not act on) is refused, with the rule's
// reason and a body of its shape that acts.
func LoadPayload(path string, size int) (*Payload, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadPayload, err)
	}
	return newPayload(path, raw, size)
}

// newPayload finds raw's shape and the places of its values, pads it to
// size, and checks that its events act, each with its own effect key.
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
		if err := p.checkActs(); err != nil {
			return nil, fmt.Errorf("%w: %s, read as a %s, would charge nothing: %w (%s acts)", ErrBadPayload, name, s.name, err, s.acting)
		}
		return p, nil
	}
	return nil, fmt.Errorf("%w: %s is not a body the payment worker can charge from (a hookline event, a Stripe invoice event or an Adyen notification)", ErrBadPayload, name)
}

// mappings is the payment worker's mappings for a run of p: p's for
// every source.
func (p *Payload) mappings() (*paymentworker.Mappings, error) {
	return paymentworker.NewMappings(map[string]paymentworker.Mapping{paymentworker.DefaultSource: p.mapping})
}

// decide is what the payment worker makes of the webhook of event id,
// the i-th of its run, as it reads it from the payments queue.
func (p *Payload) decide(ms *paymentworker.Mappings, id string, i int) (paymentworker.Payment, error) {
	return paymentworker.ParseMessageWith(events.SQSMessage{Body: string(p.body(id, i)),
		MessageAttributes: map[string]events.SQSMessageAttribute{
			"source": {DataType: "String", StringValue: aws.String(labSource)}, "event_id": {DataType: "String", StringValue: aws.String(id)},
		}}, ms)
}

// labSource is the source the lab sends its webhooks to.
const labSource = "payments"

// checkActs reports why the worker would not charge each of two events
// of p once: a mapping it refuses, a body that does not map, an event
// its rule does not act on, or two events with one effect key (the
// second would be a replay or a payload mismatch, never a charge).
func (p *Payload) checkActs() error {
	ms, err := p.mappings()
	if err != nil {
		return err
	}
	var keys []string
	for i, id := range []string{eventID("check", 1), eventID("check", 2)} {
		pay, err := p.decide(ms, id, i+1)
		switch {
		case err != nil:
			return errors.New(paymentworker.MalformedReason(err))
		case pay.NotAnEffect != "":
			return fmt.Errorf("not an effect: %s", pay.NotAnEffect)
		}
		keys = append(keys, pay.Key())
	}
	if keys[0] == keys[1] {
		return fmt.Errorf("every event would have the effect key %s", keys[0])
	}
	return nil
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

// split cuts raw around the values of the mapping's event ID, customer,
// amount and effect key.
func (p *Payload) split(raw []byte) error {
	want := map[string]field{p.mapping.Customer: fieldCustomer, p.mapping.Amount: fieldAmount}
	if p.mapping.EventID != "" {
		want[p.mapping.EventID] = fieldID
	}
	if _, taken := want[p.mapping.EffectKey]; p.mapping.EffectKey != "" && !taken {
		want[p.mapping.EffectKey] = fieldEffectKey
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
		if s.field == fieldEffectKey {
			p.keyPrefix = prefixOf(raw[s.start:s.end])
		}
		at = s.end
	}
	p.parts = append(p.parts, raw[at:])
	return nil
}

// prefixOf is the prefix of an ID as JSON text, up to its first "_"
// ("in_" of "in_1QyT..."), or "" when it has none.
func prefixOf(value []byte) string {
	var id string
	if json.Unmarshal(value, &id) != nil {
		return ""
	}
	if before, _, ok := strings.Cut(id, "_"); ok {
		return before + "_"
	}
	return ""
}

// body is the webhook of event id, the i-th of its run. Its effect key,
// when the mapping reads one apart from the event ID, is the event ID
// behind the body's own prefix: one effect per event, and a key that
// names its event, as a bare replay's rewrite of the ID needs.
func (p *Payload) body(id string, i int) []byte {
	var b bytes.Buffer
	b.Grow(p.Size + 3*len(id))
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
		case fieldEffectKey:
			b.WriteString(strconv.Quote(p.keyPrefix + id))
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
