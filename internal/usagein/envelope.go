package usagein

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/hookline/hookline/pkg/provider"
)

// EnvelopeVersion is the version of [Envelope] this build writes and reads.
const EnvelopeVersion = 1

// Envelope is the queue message of one usage event: the record as the door
// read it, the source's time rule, and whether the reconciler's export
// holds it. It holds nothing that differs between two deliveries of the
// same event, so that a retry is a duplicate at the intake; when hookline
// first saw the event is the intake record's received_at, which travels
// as a message attribute.
type Envelope struct {
	// Usage is [EnvelopeVersion]; a body without it is usage.recorded
	// itself, queued by a build before envelopes.
	Usage       int     `json:"usage"`
	Source      string  `json:"source"`
	Format      string  `json:"format"`
	Outcome     string  `json:"outcome"`
	Type        string  `json:"type"`
	RecordID    string  `json:"record_id"`
	WorkloadRef string  `json:"workload_ref,omitempty"`
	Meter       string  `json:"meter,omitempty"`
	Unit        string  `json:"unit,omitempty"`
	Units       int64   `json:"units"`
	OccurredAt  string  `json:"occurred_at,omitempty"`
	MaxAge      string  `json:"max_age"`
	MaxSkew     string  `json:"max_skew"`
	Reconciled  bool    `json:"reconciled"`
	Origin      *Origin `json:"origin,omitempty"`
	// Alert is the verified provider event of an [OutcomeAlert]
	// ([Record.Alert]); absent for every other outcome.
	Alert json.RawMessage `json:"alert,omitempty"`
}

// Envelope returns the queue message of rec, read on source under m.
func (m Mapping) Envelope(source string, rec Record) []byte {
	env := Envelope{Usage: EnvelopeVersion, Source: source, Format: m.Format, Outcome: rec.Outcome, Type: clip(rec.Type),
		RecordID: rec.RecordID, WorkloadRef: rec.WorkloadRef, Meter: rec.Meter, Unit: rec.Unit, Units: rec.Units,
		MaxAge: m.rule.MaxAge.String(), MaxSkew: m.rule.MaxSkew.String(), Reconciled: m.IsReconciled()}
	if !rec.OccurredAt.IsZero() {
		env.OccurredAt = rec.OccurredAt.UTC().Format(time.RFC3339Nano)
	}
	if rec.Origin != (Origin{}) {
		env.Origin = &rec.Origin
	}
	if rec.Alert != "" {
		env.Alert = json.RawMessage(rec.Alert)
	}
	b, _ := encodeJSON(env) // strings, numbers and the verified event always encode
	return b
}

// encodeJSON is v in compact JSON, with no HTML escaping.
func encodeJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSpace(b.Bytes()), nil
}

// Message is a usage message as the spend worker reads it.
type Message struct {
	Record
	Source string
	// Rule is the time rule the door applied, against Seen.
	Rule TimeRule
	// Seen is when hookline first saw the event (the intake's
	// received_at); OccurredAt, when the event did not say, is Seen.
	Seen time.Time
	// Reconciled says the reconciler's export holds the record.
	Reconciled bool
	// Legacy is a usage.recorded body queued by a build before envelopes,
	// and EventID its own id (an envelope's event is the intake's).
	Legacy  bool
	EventID string
}

// DecodeMessage reads a usage queue message: an [Envelope], or, from a
// build before envelopes, a usage.recorded body, which is read as that
// build read it ([provider.ParseUsageEvent], [DefaultTimeRule]). seen is
// when hookline first saw the event, the intake's received_at: the
// record's time is checked again against it under the rule the door
// applied, so that a redrive days later reads it as the door did. A zero
// seen applies no time rule, for a reader that only inspects. Every
// refusal is a [*provider.FieldError].
func DecodeMessage(body []byte, seen time.Time) (Message, error) {
	doc, err := provider.ReadJSON(body)
	if err != nil {
		return Message{}, err
	}
	if _, ok := doc.Member("usage"); !ok {
		return decodeLegacy(body, seen)
	}
	if d := doc.Duplicate(); d != "" {
		return Message{}, &provider.FieldError{Field: d, Reason: "member given twice"}
	}
	var env Envelope
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&env); err != nil {
		return Message{}, &provider.FieldError{Reason: "not a usage envelope: " + err.Error()}
	}
	return env.message(seen)
}

// decodeLegacy reads a usage.recorded body queued before envelopes.
func decodeLegacy(body []byte, seen time.Time) (Message, error) {
	ev, err := provider.DecodeUsageEvent(body)
	if err == nil && !seen.IsZero() {
		err = provider.CheckUsageTime(ev.Data.OccurredAt, seen, "data.occurred_at")
	}
	if err != nil {
		return Message{}, err
	}
	d := ev.Data
	return Message{Record: Record{Outcome: OutcomeUsage, Type: ev.Type, RecordID: d.RecordID, WorkloadRef: d.WorkloadRef,
		Meter: DefaultUnit, Unit: DefaultUnit, Units: d.Units, OccurredAt: d.OccurredAt},
		Rule: DefaultTimeRule, Seen: seen, Reconciled: true, Legacy: true, EventID: ev.ID}, nil
}

// message checks an envelope and turns it into a Message.
func (env Envelope) message(seen time.Time) (Message, error) {
	msg := Message{Record: Record{Outcome: env.Outcome, Type: env.Type, RecordID: env.RecordID, WorkloadRef: env.WorkloadRef,
		Meter: env.Meter, Unit: env.Unit, Units: env.Units, Alert: string(env.Alert)}, Source: env.Source, Seen: seen, Reconciled: env.Reconciled}
	if env.Origin != nil {
		msg.Origin = *env.Origin
	}
	if env.Usage != EnvelopeVersion {
		return Message{}, &provider.FieldError{Field: "usage", Reason: fmt.Sprintf("envelope version %d, this build reads %d", env.Usage, EnvelopeVersion)}
	}
	if !slices.Contains([]string{OutcomeUsage, OutcomeZero, OutcomeNotUsage, OutcomeAlert}, env.Outcome) {
		return Message{}, &provider.FieldError{Field: "outcome", Reason: fmt.Sprintf("%q is not usage, zero, not_usage or alert", env.Outcome)}
	}
	var err error
	if msg.Rule, err = env.rule(); err != nil {
		return Message{}, err
	}
	if err := env.checkAlert(); err != nil {
		return Message{}, err
	}
	if env.Outcome == OutcomeNotUsage || env.Outcome == OutcomeAlert {
		return msg, nil // no ledger key: usage.recorded's other types carry none, an alert is no record
	}
	if err := env.checkUsage(); err != nil {
		return Message{}, err
	}
	if msg.OccurredAt, err = env.occurred(seen, msg.Rule); err != nil {
		return Message{}, err
	}
	return msg, nil
}

// checkAlert refuses an alert without its event and key, and an event
// on any other outcome.
func (env Envelope) checkAlert() error {
	if env.Outcome != OutcomeAlert {
		if len(env.Alert) > 0 {
			return &provider.FieldError{Field: "alert", Reason: "only an alert carries its event, outcome " + env.Outcome}
		}
		return nil
	}
	if err := provider.CheckUsageID("record_id", env.RecordID); err != nil {
		return err
	}
	if !bytes.HasPrefix(env.Alert, []byte("{")) {
		return &provider.FieldError{Field: "alert", Reason: "want the provider's event, a JSON object"}
	}
	return nil
}

// checkUsage refuses a usage envelope the ledger cannot count.
func (env Envelope) checkUsage() error {
	for _, f := range []struct{ name, v string }{{"record_id", env.RecordID}, {"workload_ref", env.WorkloadRef}, {"meter", env.Meter}, {"unit", env.Unit}} {
		if err := provider.CheckUsageID(f.name, f.v); err != nil {
			return err
		}
	}
	switch {
	case env.Units < 0 || env.Units > MaxUnits:
		return &provider.FieldError{Field: "units", Reason: fmt.Sprintf("outside 0..%d", MaxUnits)}
	case (env.Units == 0) != (env.Outcome == OutcomeZero):
		return &provider.FieldError{Field: "units", Reason: fmt.Sprintf("%d units with outcome %s", env.Units, env.Outcome)}
	}
	return nil
}

// rule reads the envelope's time rule.
func (env Envelope) rule() (TimeRule, error) {
	age, err1 := time.ParseDuration(env.MaxAge)
	skew, err2 := time.ParseDuration(env.MaxSkew)
	r := TimeRule{MaxAge: age, MaxSkew: skew}
	if err1 != nil || err2 != nil {
		return TimeRule{}, &provider.FieldError{Field: "max_age", Reason: "want durations in max_age and max_skew"}
	}
	if err := r.Validate(); err != nil {
		return TimeRule{}, &provider.FieldError{Field: "max_age", Reason: err.Error()}
	}
	return r, nil
}

// occurred reads the record's time, checked against seen under rule; a
// record without one happened when it was seen.
func (env Envelope) occurred(seen time.Time, rule TimeRule) (time.Time, error) {
	if env.OccurredAt == "" {
		return seen, nil
	}
	t, err := time.Parse(time.RFC3339Nano, env.OccurredAt)
	if err != nil {
		return time.Time{}, &provider.FieldError{Field: "occurred_at", Reason: "want an RFC 3339 time"}
	}
	if seen.IsZero() {
		return t.UTC(), nil
	}
	return t.UTC(), rule.Check(t, seen, "occurred_at")
}
