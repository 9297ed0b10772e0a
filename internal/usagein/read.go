package usagein

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hookline/hookline/pkg/provider"
)

// Outcomes of a record.
const (
	// OutcomeUsage is a record to count.
	OutcomeUsage = "usage"
	// OutcomeZero is usage of zero: acknowledged and recorded, with no
	// ledger effect. A meter's zero is a valid reading; refusing it would
	// make its sender retry it forever.
	OutcomeZero = "zero"
	// OutcomeNotUsage is an event of a type the mapping does not count:
	// acknowledged and recorded as not usage, never counted.
	OutcomeNotUsage = "not_usage"
	// OutcomeAlert is a provider's threshold alert ([FormatStripeAlerts]):
	// no record to count, but a lower bound the spend worker compares with
	// the ledger. Its record carries the event in Alert.
	OutcomeAlert = "alert"
)

// Record is one event as the door read it: what the ledger counts and
// what identifies it.
type Record struct {
	Outcome string
	// Type is the event's type.
	Type string
	// RecordID is the ledger key: usage.recorded's record_id, or a
	// CloudEvent's [CloudEventKey].
	RecordID    string
	WorkloadRef string
	Meter, Unit string
	// Units is the value at the mapping's scale.
	Units int64
	// OccurredAt is zero when the event does not say: it then happened
	// when hookline first saw it.
	OccurredAt time.Time
	// Origin is where a CloudEvent came from, for an operator's search at
	// the producer; zero for usage.recorded.
	Origin Origin
	// Alert is the verified provider event of an [OutcomeAlert], as JSON
	// text the spend worker reads; "" for every other outcome. (Text, so
	// that a Record stays comparable.)
	Alert string
}

// Origin is a CloudEvent's source and id, each cut to 255 bytes.
type Origin struct {
	Source string `json:"source"`
	ID     string `json:"id"`
}

// Item is one event of a body: its record, or why it was refused.
type Item struct {
	// Index is the event's position in a batch (0 otherwise).
	Index int
	// EventID is the intake identity: the delivery's own for
	// usage.recorded, the ledger key for a CloudEvent, the event's ID for
	// a Stripe event.
	EventID string
	Record  Record
	// Err is a [*provider.FieldError]; in a batch its field starts with
	// the item's index ("[2].data.value").
	Err error
}

// Body is a verified request as the mapping reads it.
type Body struct {
	// Batch is true for a CloudEvents batch.
	Batch bool
	Items []Item
}

// Request is what the door knows of a verified request besides its body.
type Request struct {
	// Source is the hookline source's name.
	Source string
	// DeliveryID is the signed delivery's identity (webhook-id).
	DeliveryID string
	// ContentType is the Content-Type header; Headers all of them.
	ContentType string
	Headers     map[string]string
	// Seen is when hookline first saw the request: the door's clock.
	Seen time.Time
}

// Read reads a verified body under m. A whole body that cannot be read
// (not JSON, another shape than the source takes, binary mode, a
// structured event refused) is an error, a [*provider.FieldError]. In a
// batch each event is read on its own: an event refused is an Item with
// Err, and only a batch with no event left is an error, the first
// refusal's.
func (m Mapping) Read(body []byte, req Request) (Body, error) {
	doc, err := provider.ReadJSON(body)
	if err != nil {
		return Body{}, err
	}
	if m.Format == FormatHookline {
		rec, err := m.readHookline(doc, req.Seen)
		if err != nil {
			return Body{}, err
		}
		return Body{Items: []Item{{EventID: req.DeliveryID, Record: rec}}}, nil
	}
	if m.Format == FormatOpenMeterAlerts {
		it, err := readOpenMeterNotification(doc, body)
		if err != nil {
			return Body{}, err
		}
		return Body{Items: []Item{it}}, nil
	}
	if m.Format == FormatStripeAlerts {
		it, err := readStripeEvent(doc, body)
		if err != nil {
			return Body{}, err
		}
		return Body{Items: []Item{it}}, nil
	}
	return m.readCloudEvents(doc, req)
}

// readCloudEvents reads a structured event or a batch.
func (m Mapping) readCloudEvents(doc provider.JSON, req Request) (Body, error) {
	if err := checkBinaryMode(req.Headers); err != nil {
		return Body{}, err
	}
	batch := doc.Kind() == provider.JSONArray
	if err := checkShape(batch, req.ContentType, m.Mode); err != nil {
		return Body{}, err
	}
	if !batch {
		it := m.readEvent(doc, req)
		return Body{Items: []Item{it}}, it.Err
	}
	out := Body{Batch: true}
	for i, v := range doc.Items() {
		it := m.readEvent(v, req)
		it.Index = i
		if fe, ok := provider.AsFieldError(it.Err); ok {
			it.Err = &provider.FieldError{Field: indexed(i, fe.Field), Reason: fe.Reason}
		}
		out.Items = append(out.Items, it)
	}
	if first := out.firstRefusal(); first != nil && !out.anyRead() {
		return Body{}, first
	}
	return out, nil
}

// readEvent reads one CloudEvent into its record.
func (m Mapping) readEvent(v provider.JSON, req Request) Item {
	ev, err := ReadCloudEvent(v)
	if err != nil {
		return Item{Err: err}
	}
	key := CloudEventKey(req.Source, ev.Source, ev.ID)
	rec := Record{Outcome: OutcomeNotUsage, Type: ev.Type, RecordID: key, Origin: Origin{clip(ev.Source), clip(ev.ID)}}
	if !slices.Contains(m.UsageTypes, ev.Type) {
		return Item{EventID: key, Record: rec}
	}
	if err := m.readUsage(ev.Doc, &rec, req.Seen); err != nil {
		return Item{EventID: key, Err: err}
	}
	return Item{EventID: key, Record: rec}
}

// readHookline reads usage.recorded, as [provider.DecodeUsageEvent] does,
// under the door's rules: another type is not usage, and zero units are
// zero usage.
func (m Mapping) readHookline(doc provider.JSON, seen time.Time) (Record, error) {
	if doc.Kind() != provider.JSONObject {
		return Record{}, &provider.FieldError{Reason: "want a JSON object, got " + doc.Describe()}
	}
	if d := doc.Duplicate(); d != "" {
		return Record{}, &provider.FieldError{Field: d, Reason: "member given twice"}
	}
	typ, err := stringAt(doc, "/type", true)
	if err != nil {
		return Record{}, err
	}
	rec := Record{Outcome: OutcomeNotUsage, Type: typ}
	if !slices.Contains(m.UsageTypes, typ) {
		return rec, nil
	}
	if _, err := idAt(doc, hooklinePointers.id); err != nil {
		return Record{}, err
	}
	if data, ok, _ := doc.Pointer("/data"); !ok || data.Kind() != provider.JSONObject {
		return Record{}, &provider.FieldError{Field: "data", Reason: "want an object holding the usage record"}
	}
	if rec.RecordID, err = idAt(doc, hooklinePointers.recordID); err != nil {
		return Record{}, err
	}
	if err := m.readUsage(doc, &rec, seen); err != nil {
		return Record{}, err
	}
	return rec, nil
}

// readUsage reads the workload, meter, value and time of a usage event,
// and applies the source's time rule.
func (m Mapping) readUsage(doc provider.JSON, rec *Record, seen time.Time) error {
	var err error
	if rec.WorkloadRef, err = idAt(doc, m.Workload); err != nil {
		return err
	}
	rec.Meter, rec.Unit = m.MeterName, m.Unit
	if m.Meter != "" {
		if rec.Meter, err = idAt(doc, m.Meter); err != nil {
			return err
		}
	}
	if rec.Units, err = m.units(doc); err != nil {
		return err
	}
	if rec.OccurredAt, err = m.occurred(doc); err != nil {
		return err
	}
	if !rec.OccurredAt.IsZero() {
		if err := m.rule.Check(rec.OccurredAt, seen, field(m.Time)); err != nil {
			return err
		}
	}
	rec.Outcome = OutcomeUsage
	if rec.Units == 0 {
		rec.Outcome = OutcomeZero
	}
	return nil
}

// units reads the value as the mapping's format says, scaled.
func (m Mapping) units(doc provider.JSON) (int64, error) {
	if m.ValueFormat == ValueCount {
		return 1, nil
	}
	v, err := at(doc, m.Value, true)
	f := field(m.Value)
	switch {
	case err != nil:
		return 0, err
	case v.Kind() == provider.JSONNumber && m.ValueFormat == ValueInteger && !isIntegerLiteral(v.Text()):
		return 0, &provider.FieldError{Field: f, Reason: "want an integer literal (no fraction or exponent), got " + quoteBounded(v.Text())}
	case v.Kind() == provider.JSONNumber, v.Kind() == provider.JSONString && m.ValueFormat == ValueDecimal:
	case m.ValueFormat == ValueInteger:
		return 0, &provider.FieldError{Field: f, Reason: "want a non-negative integer, got " + v.Describe()}
	default:
		return 0, &provider.FieldError{Field: f, Reason: "want a number or a decimal string, got " + v.Describe()}
	}
	n, err := ScaleDecimal(v.Text(), m.Scale)
	if err != nil {
		return 0, &provider.FieldError{Field: f, Reason: err.Error()}
	}
	return n, nil
}

// occurred reads the time, which a CloudEvent may leave out.
func (m Mapping) occurred(doc provider.JSON) (time.Time, error) {
	text, err := stringAt(doc, m.Time, m.Format == FormatHookline)
	if err != nil || text == "" {
		return time.Time{}, err
	}
	t, perr := time.Parse(time.RFC3339Nano, text)
	if perr != nil {
		return time.Time{}, &provider.FieldError{Field: field(m.Time), Reason: "want an RFC 3339 time"}
	}
	return t.UTC(), nil
}

// at follows ptr. A member spelled like one the pointer names, but not
// exactly, is refused: a JSON pointer would not find it, encoding/json
// would.
func at(doc provider.JSON, ptr string, required bool) (provider.JSON, error) {
	v, ok, near := doc.Pointer(ptr)
	switch {
	case near != "":
		return v, &provider.FieldError{Field: nearField(ptr, near), Reason: "member names are exact: want " + quoteBounded(lastToken(ptr))}
	case (!ok || v.Kind() == provider.JSONNull) && required:
		return v, &provider.FieldError{Field: field(ptr), Reason: "required"}
	}
	return v, nil
}

// stringAt reads a string at ptr; "" when it is absent or null and not
// required.
func stringAt(doc provider.JSON, ptr string, required bool) (string, error) {
	v, err := at(doc, ptr, required)
	switch {
	case err != nil:
		return "", err
	case v.Kind() == provider.JSONNull:
		return "", nil
	case v.Kind() != provider.JSONString:
		return "", &provider.FieldError{Field: field(ptr), Reason: "want a string, got " + v.Describe()}
	}
	return v.Text(), nil
}

// idAt reads an identifier at ptr ([provider.CheckUsageID]).
func idAt(doc provider.JSON, ptr string) (string, error) {
	s, err := stringAt(doc, ptr, true)
	if err != nil {
		return "", err
	}
	return s, provider.CheckUsageID(field(ptr), s)
}

// field names the member a pointer points at as the answers name fields:
// "/data/units" is "data.units".
func field(ptr string) string {
	toks := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	for i, t := range toks {
		toks[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return strings.Join(toks, ".")
}

// nearField names the member near that stands where ptr's step did not.
func nearField(ptr, near string) string {
	parent := ptr[:strings.LastIndex(ptr, "/")]
	if parent == "" {
		return near
	}
	return field(parent) + "." + near
}

func lastToken(ptr string) string { return field(ptr[strings.LastIndex(ptr, "/"):]) }

func (b Body) firstRefusal() error {
	for _, it := range b.Items {
		if it.Err != nil {
			return it.Err
		}
	}
	return nil
}

func (b Body) anyRead() bool {
	for _, it := range b.Items {
		if it.Err == nil {
			return true
		}
	}
	return false
}

// isIntegerLiteral reports whether s is an optional '-' and digits only.
func isIntegerLiteral(s string) bool { return allDigits(strings.TrimPrefix(s, "-")) }

// quoteBounded quotes at most 32 bytes of a caller's text.
func quoteBounded(s string) string {
	if len(s) > 32 {
		return fmt.Sprintf("%q...", s[:32])
	}
	return fmt.Sprintf("%q", s)
}

// clip cuts s to 255 bytes on a rune boundary.
func clip(s string) string {
	if len(s) <= 255 {
		return s
	}
	return strings.ToValidUTF8(s[:255], "")
}
