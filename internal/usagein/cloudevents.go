package usagein

import (
	"fmt"
	"mime"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hookline/hookline/pkg/provider"
)

// The media types of CloudEvents' JSON format: one event (structured mode)
// and a batch.
const (
	MediaCloudEvent      = "application/cloudevents+json"
	MediaCloudEventBatch = "application/cloudevents-batch+json"
	mediaJSON            = "application/json"
)

// SpecVersion is the one CloudEvents version read.
const SpecVersion = "1.0"

// CloudEvent is one event of a structured or batch body, its attributes
// read by exact name.
type CloudEvent struct {
	ID, Source, Type string
	// Subject is "" when unset.
	Subject string
	// Time is zero when unset.
	Time time.Time
	// Doc is the event object, which a mapping's pointers read.
	Doc provider.JSON
}

// ReadCloudEvents reads a structured event (a JSON object) or a batch (an
// array of them) with [ReadCloudEvent], refusing the whole body at its
// first bad event; a refusal in a batch names the event's index.
func ReadCloudEvents(body []byte) ([]CloudEvent, error) {
	doc, err := provider.ReadJSON(body)
	if err != nil {
		return nil, err
	}
	if doc.Kind() != provider.JSONArray {
		ev, err := ReadCloudEvent(doc)
		return []CloudEvent{ev}, err
	}
	var out []CloudEvent
	for i, v := range doc.Items() {
		ev, err := ReadCloudEvent(v)
		if fe, ok := provider.AsFieldError(err); ok {
			return nil, &provider.FieldError{Field: indexed(i, fe.Field), Reason: fe.Reason}
		}
		out = append(out, ev)
	}
	return out, nil
}

// indexed prefixes a batch item's field with its index.
func indexed(i int, f string) string {
	if f == "" {
		return fmt.Sprintf("[%d]", i)
	}
	return fmt.Sprintf("[%d].%s", i, f)
}

// attributeName is the spec's rule for an attribute's name: lower-case
// ASCII letters and digits, at most 20 of them.
var attributeName = regexp.MustCompile(`^[a-z0-9]{1,20}$`)

// contextAttributes are the attributes the spec defines, each a string in
// JSON; every other attribute is an extension.
var contextAttributes = map[string]bool{
	"specversion": true, "id": true, "source": true, "type": true,
	"datacontenttype": true, "dataschema": true, "subject": true, "time": true,
}

// ReadCloudEvent reads one event object of CloudEvents 1.0's JSON format:
// specversion exactly "1.0"; id, source and type non-empty strings;
// subject, time (RFC 3339), datacontenttype (a media type) and dataschema
// (an absolute URI) as the spec types them; extension attributes named by
// the spec's rule, valued a string, a boolean or an integer; no member
// given twice anywhere; data or data_base64, never both. A null attribute
// is unset, as the JSON format says. Every refusal is a
// [*provider.FieldError] naming the member.
func ReadCloudEvent(v provider.JSON) (CloudEvent, error) {
	if v.Kind() != provider.JSONObject {
		return CloudEvent{}, &provider.FieldError{Reason: "want a CloudEvent (a JSON object), got " + v.Describe()}
	}
	if d := v.Duplicate(); d != "" {
		return CloudEvent{}, &provider.FieldError{Field: d, Reason: "member given twice"}
	}
	ev := CloudEvent{Doc: v}
	attrs := map[string]string{}
	hasData, hasBase64 := false, false
	for _, m := range v.Members() {
		null := m.Value.Kind() == provider.JSONNull
		switch {
		case m.Name == "data":
			hasData = !null
		case m.Name == "data_base64" && !null && m.Value.Kind() != provider.JSONString:
			return CloudEvent{}, &provider.FieldError{Field: m.Name, Reason: "want a base64 string, got " + m.Value.Describe()}
		case m.Name == "data_base64":
			hasBase64 = !null
		case !attributeName.MatchString(m.Name):
			return CloudEvent{}, &provider.FieldError{Field: m.Name, Reason: "an attribute's name is 1 to 20 lower-case letters and digits (CloudEvents 1.0)"}
		case null:
		default:
			if err := checkAttribute(m.Name, m.Value); err != nil {
				return CloudEvent{}, err
			}
			attrs[m.Name] = m.Value.Text()
		}
	}
	if hasData && hasBase64 {
		return CloudEvent{}, &provider.FieldError{Field: "data_base64", Reason: "an event carries data or data_base64, never both"}
	}
	if err := checkContext(attrs); err != nil {
		return CloudEvent{}, err
	}
	ev.ID, ev.Source, ev.Type, ev.Subject = attrs["id"], attrs["source"], attrs["type"], attrs["subject"]
	if t, ok := attrs["time"]; ok {
		ev.Time, _ = time.Parse(time.RFC3339Nano, t) // checkContext parsed it
		ev.Time = ev.Time.UTC()
	}
	return ev, nil
}

// checkAttribute refuses an attribute whose value no CloudEvents type
// maps to: a context attribute is a string; an extension a string, a
// boolean or an integer.
func checkAttribute(name string, v provider.JSON) error {
	switch kind := v.Kind(); {
	case kind == provider.JSONString:
		return nil
	case contextAttributes[name]:
		return &provider.FieldError{Field: name, Reason: "want a string, got " + v.Describe()}
	case kind == provider.JSONBool:
		return nil
	case kind == provider.JSONNumber:
		if _, err := strconv.ParseInt(v.Text(), 10, 32); err != nil {
			return &provider.FieldError{Field: name, Reason: "an integer attribute is a whole number within 32 bits"}
		}
		return nil
	}
	return &provider.FieldError{Field: name, Reason: "want a string, a boolean or an integer, got " + v.Describe()}
}

// checkContext applies the spec's rules to the context attributes read.
func checkContext(attrs map[string]string) error {
	if v, ok := attrs["specversion"]; !ok || v != SpecVersion {
		return &provider.FieldError{Field: "specversion", Reason: fmt.Sprintf("want %q", SpecVersion)}
	}
	for _, name := range []string{"id", "source", "type"} {
		if attrs[name] == "" {
			return &provider.FieldError{Field: name, Reason: "required, a non-empty string"}
		}
	}
	if _, err := url.Parse(attrs["source"]); err != nil {
		return &provider.FieldError{Field: "source", Reason: "want a URI-reference"}
	}
	if v, ok := attrs["subject"]; ok && v == "" {
		return &provider.FieldError{Field: "subject", Reason: "must not be empty"}
	}
	if v, ok := attrs["time"]; ok {
		if _, err := time.Parse(time.RFC3339Nano, v); err != nil {
			return &provider.FieldError{Field: "time", Reason: "want an RFC 3339 time"}
		}
	}
	if v, ok := attrs["datacontenttype"]; ok {
		if _, _, err := mime.ParseMediaType(v); err != nil {
			return &provider.FieldError{Field: "datacontenttype", Reason: "want a media type (RFC 2046)"}
		}
	}
	if v, ok := attrs["dataschema"]; ok {
		if u, err := url.Parse(v); err != nil || !u.IsAbs() {
			return &provider.FieldError{Field: "dataschema", Reason: "want an absolute URI"}
		}
	}
	return nil
}

// Modes of a CloudEvents source: which body shapes it takes.
const (
	ModeAny        = "any"
	ModeStructured = "structured"
	ModeBatch      = "batch"
)

// checkShape refuses a body whose shape (one event, or a batch) the
// source's mode does not take, or that the request's Content-Type
// contradicts. The shape is the body's; a header, which nothing signs,
// never decides it. A Content-Type of application/json, or none, says
// nothing about the shape: generic senders (Svix among them) send JSON
// as application/json.
func checkShape(batch bool, contentType, mode string) error {
	switch {
	case batch && mode == ModeStructured:
		return &provider.FieldError{Reason: "this source takes one event per request (structured mode), got a batch"}
	case !batch && mode == ModeBatch:
		return &provider.FieldError{Reason: "this source takes batches (an array of events), got one event"}
	}
	if strings.TrimSpace(contentType) == "" {
		return nil
	}
	mt, _, err := mime.ParseMediaType(contentType)
	switch {
	case err != nil:
		return &provider.FieldError{Field: "content-type", Reason: "not a media type"}
	case mt == mediaJSON:
		return nil
	case mt == MediaCloudEvent && batch:
		return &provider.FieldError{Field: "content-type", Reason: MediaCloudEvent + " says one event, the body is a batch (an array)"}
	case mt == MediaCloudEventBatch && !batch:
		return &provider.FieldError{Field: "content-type", Reason: MediaCloudEventBatch + " says a batch, the body is one event"}
	case mt == MediaCloudEvent || mt == MediaCloudEventBatch:
		return nil
	}
	return &provider.FieldError{Field: "content-type", Reason: fmt.Sprintf("want %s, %s or %s", MediaCloudEvent, MediaCloudEventBatch, mediaJSON)}
}

// checkBinaryMode refuses a request in CloudEvents' binary mode, whose
// attributes travel as ce-* headers: id and source would come from
// headers no signature covers.
func checkBinaryMode(headers map[string]string) error {
	var found []string
	for name := range headers {
		if len(name) > 3 && strings.EqualFold(name[:3], "ce-") {
			found = append(found, strings.ToLower(name))
		}
	}
	if len(found) == 0 {
		return nil
	}
	slices.Sort(found)
	return &provider.FieldError{Field: found[0], Reason: "binary mode is refused: send the event in structured or batch mode, whose attributes are signed"}
}
