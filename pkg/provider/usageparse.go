package provider

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// The time rules of a usage record, read by the receiver, the spend worker
// and the reconciler alike. A record's occurred_at must lie within
// [ref-MaxUsageAge, ref+MaxUsageSkew], where ref is when the record reached
// us: the receiver's clock at the door, the intake time in the spend
// worker, and the record's published_at (else the run's clock) on the
// export path. Outside it, the record is refused at the door or
// quarantined by the poll, never counted.
const (
	// MaxUsageSkew is how far in the future occurred_at may lie: the
	// clock skew we tolerate, the same as the signature's replay window.
	MaxUsageSkew = 5 * time.Minute
	// MaxUsageAge is how far in the past occurred_at may lie: the reach
	// of the export poll and of the provider's retries.
	MaxUsageAge = 72 * time.Hour
	// MaxUsageUnits is the largest units a record may carry, 2^53 (the
	// ledger's limit, exact in every JSON reader).
	MaxUsageUnits int64 = 1 << 53
	// maxUsageIDLen bounds record_id and workload_ref.
	maxUsageIDLen = 255
)

// ErrInvalidUsage means a usage webhook or export record cannot become a
// ledger record. It is always wrapped in a [*FieldError].
var ErrInvalidUsage = errors.New("provider: invalid usage")

// FieldError names the member of a usage body that cannot be accounted
// for, and why. Field is a dotted path such as "data.units".
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string {
	if e.Field == "" {
		return "provider: invalid usage: " + e.Reason
	}
	return "provider: invalid usage: " + e.Field + ": " + e.Reason
}

// Unwrap makes errors.Is(err, ErrInvalidUsage) hold.
func (e *FieldError) Unwrap() error { return ErrInvalidUsage }

// AsFieldError returns the [*FieldError] in err's chain, if any.
func AsFieldError(err error) (*FieldError, bool) {
	var fe *FieldError
	ok := errors.As(err, &fe)
	return fe, ok
}

// ParseUsageEvent reads a usage webhook body with [DecodeUsageEvent] and
// applies the time rules ([CheckUsageTime]) to data.occurred_at against
// ref, when the usage reached us. Every refusal is a [*FieldError].
func ParseUsageEvent(body []byte, ref time.Time) (UsageEvent, error) {
	ev, err := DecodeUsageEvent(body)
	if err != nil {
		return UsageEvent{}, err
	}
	if err := CheckUsageTime(ev.Data.OccurredAt, ref, "data.occurred_at"); err != nil {
		return UsageEvent{}, err
	}
	return ev, nil
}

// DecodeUsageEvent reads a usage webhook body strictly, without the time
// rules: exact member names, no member given twice, type
// [UsageEventType], and data holding a record with record_id,
// workload_ref, units from 1 to [MaxUsageUnits] and occurred_at. Every
// refusal is a [*FieldError].
func DecodeUsageEvent(body []byte) (UsageEvent, error) {
	v, err := decodeStrict(body)
	if err != nil {
		return UsageEvent{}, asField("", err)
	}
	if v.kind != kindObject {
		return UsageEvent{}, &FieldError{Reason: "want a JSON object, got " + v.kind.String()}
	}
	f, err := v.fields("", "id", "type", "created", "data")
	if err != nil {
		return UsageEvent{}, err
	}
	var ev UsageEvent
	if ev.ID, err = requiredID(f, "", "id"); err != nil {
		return UsageEvent{}, err
	}
	typ, ok := f["type"]
	switch {
	case !ok:
		return UsageEvent{}, &FieldError{Field: "type", Reason: "required"}
	case typ.kind != kindString || typ.text != UsageEventType:
		return UsageEvent{}, &FieldError{Field: "type", Reason: fmt.Sprintf("want %q", UsageEventType)}
	}
	ev.Type = typ.text
	if c, ok := f["created"]; ok && c.kind != kindNull {
		if ev.Created, err = timeMember(c, "created"); err != nil {
			return UsageEvent{}, err
		}
	}
	data, ok := f["data"]
	if !ok || data.kind != kindObject {
		return UsageEvent{}, &FieldError{Field: "data", Reason: "want an object holding the usage record"}
	}
	if ev.Data, err = usageRecord(data, "data"); err != nil {
		return UsageEvent{}, err
	}
	return ev, nil
}

// CheckUsageTime applies the time rules ([MaxUsageSkew], [MaxUsageAge]) to
// occurred against ref; field names the member in the error.
func CheckUsageTime(occurred, ref time.Time, field string) error {
	return CheckUsageTimeWithin(occurred, ref, MaxUsageAge, MaxUsageSkew, field)
}

// CheckUsageTimeWithin refuses occurred when it lies outside
// [ref-maxAge, ref+maxSkew], naming field: the time rule of a source that
// states its own reach.
func CheckUsageTimeWithin(occurred, ref time.Time, maxAge, maxSkew time.Duration, field string) error {
	switch {
	case occurred.After(ref.Add(maxSkew)):
		return &FieldError{Field: field, Reason: fmt.Sprintf("%s is more than %s after %s",
			occurred.UTC().Format(time.RFC3339), maxSkew, ref.UTC().Format(time.RFC3339))}
	case occurred.Before(ref.Add(-maxAge)):
		return &FieldError{Field: field, Reason: fmt.Sprintf("%s is more than %s before %s",
			occurred.UTC().Format(time.RFC3339), maxAge, ref.UTC().Format(time.RFC3339))}
	}
	return nil
}

// CheckExportRecord applies the time rules to an export record: against
// its published_at, and never later than now plus the skew.
func CheckExportRecord(rec UsageRecord, now time.Time) error {
	return CheckExportRecordWithin(rec, now, MaxUsageAge, MaxUsageSkew)
}

// CheckExportRecordWithin is [CheckExportRecord] under a source's own
// reach and skew.
func CheckExportRecordWithin(rec UsageRecord, now time.Time, maxAge, maxSkew time.Duration) error {
	ref := rec.PublishedAt
	if ref.IsZero() || ref.After(now) {
		ref = now
	}
	return CheckUsageTimeWithin(rec.OccurredAt, ref, maxAge, maxSkew, "occurred_at")
}

// usageRecord reads one usage record object at path.
func usageRecord(v value, path string) (UsageRecord, error) {
	f, err := v.fields(path, "record_id", "workload_ref", "units", "occurred_at", "published_at")
	if err != nil {
		return UsageRecord{}, err
	}
	var rec UsageRecord
	if rec.RecordID, err = requiredID(f, path, "record_id"); err != nil {
		return UsageRecord{}, err
	}
	if rec.WorkloadRef, err = requiredID(f, path, "workload_ref"); err != nil {
		return UsageRecord{}, err
	}
	if rec.Units, err = units(f, path); err != nil {
		return UsageRecord{}, err
	}
	at, ok := f["occurred_at"]
	if !ok {
		return UsageRecord{}, &FieldError{Field: join(path, "occurred_at"), Reason: "required"}
	}
	if rec.OccurredAt, err = timeMember(at, join(path, "occurred_at")); err != nil {
		return UsageRecord{}, err
	}
	if p, ok := f["published_at"]; ok && p.kind != kindNull {
		if rec.PublishedAt, err = timeMember(p, join(path, "published_at")); err != nil {
			return UsageRecord{}, err
		}
	}
	return rec, nil
}

// requiredID reads a member that must be 1 to 255 bytes of printable
// ASCII without spaces.
func requiredID(f map[string]value, path, name string) (string, error) {
	v, ok := f[name]
	field := join(path, name)
	switch {
	case !ok:
		return "", &FieldError{Field: field, Reason: "required"}
	case v.kind != kindString:
		return "", &FieldError{Field: field, Reason: "want a string, got " + v.kind.String()}
	}
	if err := CheckUsageID(field, v.text); err != nil {
		return "", err
	}
	return v.text, nil
}

// CheckUsageID refuses an identifier (a record ID, a workload reference, a
// meter) that is not 1 to 255 bytes of printable ASCII without spaces,
// naming field.
func CheckUsageID(field, text string) error {
	switch {
	case text == "":
		return &FieldError{Field: field, Reason: "must not be empty"}
	case len(text) > maxUsageIDLen:
		return &FieldError{Field: field, Reason: fmt.Sprintf("longer than %d bytes", maxUsageIDLen)}
	}
	for i := 0; i < len(text); i++ {
		if c := text[i]; c <= ' ' || c > '~' {
			return &FieldError{Field: field, Reason: "want printable ASCII without spaces"}
		}
	}
	return nil
}

// units reads units: a JSON integer literal from 1 to [MaxUsageUnits]. A
// record of zero units attributes nothing and would use up its record ID,
// so it is refused like a negative one.
func units(f map[string]value, path string) (int64, error) {
	v, ok := f["units"]
	field := join(path, "units")
	if !ok {
		return 0, &FieldError{Field: field, Reason: "required"}
	}
	if v.kind != kindNumber {
		return 0, &FieldError{Field: field, Reason: "want a positive integer, got " + v.kind.String()}
	}
	if !integerLiteral(v.text) {
		return 0, &FieldError{Field: field, Reason: fmt.Sprintf("want an integer literal (no fraction or exponent), got %s", bounded(v.text))}
	}
	switch {
	case v.text[0] == '-':
		return 0, &FieldError{Field: field, Reason: "must be at least 1, got a negative number"}
	case v.text == "0":
		return 0, &FieldError{Field: field, Reason: "must be at least 1, got 0"}
	}
	n, err := strconv.ParseInt(v.text, 10, 64)
	if err != nil || n > MaxUsageUnits {
		return 0, &FieldError{Field: field, Reason: fmt.Sprintf("exceeds %d (2^53)", MaxUsageUnits)}
	}
	return n, nil
}

// integerLiteral reports whether s is an optional '-' and digits only.
func integerLiteral(s string) bool {
	if len(s) > 0 && s[0] == '-' {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// timeMember reads an RFC 3339 time.
func timeMember(v value, field string) (time.Time, error) {
	if v.kind != kindString {
		return time.Time{}, &FieldError{Field: field, Reason: "want an RFC 3339 time, got " + v.kind.String()}
	}
	t, err := time.Parse(time.RFC3339Nano, v.text)
	if err != nil {
		return time.Time{}, &FieldError{Field: field, Reason: "want an RFC 3339 time"}
	}
	return t.UTC(), nil
}

// bounded quotes at most 32 bytes of a caller's text.
func bounded(s string) string {
	if len(s) > 32 {
		return strconv.Quote(s[:32]) + "..."
	}
	return strconv.Quote(s)
}

// asField turns a decoding error into a [*FieldError].
func asField(path string, err error) error {
	if fe, ok := AsFieldError(err); ok {
		return fe
	}
	return &FieldError{Field: path, Reason: err.Error()}
}

// DecodeUsagePage reads a page of the usage export strictly. The page's
// own shape (an object with a records array and an optional string
// next_page_token, no member given twice) must hold, or the page is an
// error wrapping [ErrBadResponse]. A record that cannot become a ledger
// record does not fail the page: it comes back with Invalid set, naming
// the field, so that the reconciler quarantines it and moves on. A record
// without a usable record_id is given one derived from its bytes
// ("invalid-" and a hash), so that its quarantine is idempotent too.
func DecodeUsagePage(body []byte) (UsagePage, error) {
	v, err := decodeStrict(body)
	if err != nil {
		return UsagePage{}, fmt.Errorf("%w: usage page: %w", ErrBadResponse, err)
	}
	if v.kind != kindObject {
		return UsagePage{}, fmt.Errorf("%w: usage page: want an object, got %s", ErrBadResponse, v.kind)
	}
	if v.ownDup != "" {
		return UsagePage{}, fmt.Errorf("%w: usage page: member %q given twice", ErrBadResponse, v.ownDup)
	}
	v.dup = "" // a record's own problems are the record's, not the page's
	f, err := v.fields("", "records", "next_page_token")
	if err != nil {
		return UsagePage{}, fmt.Errorf("%w: usage page: %w", ErrBadResponse, err)
	}
	var pg UsagePage
	if t, ok := f["next_page_token"]; ok && t.kind != kindNull {
		if t.kind != kindString {
			return UsagePage{}, fmt.Errorf("%w: usage page: next_page_token: want a string", ErrBadResponse)
		}
		pg.NextPageToken = t.text
	}
	recs, ok := f["records"]
	switch {
	case !ok || recs.kind == kindNull:
		return pg, nil
	case recs.kind != kindArray:
		return UsagePage{}, fmt.Errorf("%w: usage page: records: want an array", ErrBadResponse)
	}
	for i, item := range recs.items {
		pg.Records = append(pg.Records, exportRecord(item, fmt.Sprintf("records[%d]", i)))
	}
	return pg, nil
}

// exportRecord reads one export record, keeping what it can of a record
// that fails the schema for its quarantine.
func exportRecord(item value, path string) UsageRecord {
	if item.kind != kindObject {
		return UsageRecord{RecordID: syntheticID(item), Invalid: &FieldError{Field: path, Reason: "want an object, got " + item.kind.String()}}
	}
	rec, err := usageRecord(item, "")
	if err == nil {
		return rec
	}
	fe, _ := AsFieldError(err)
	rec = partialRecord(item)
	if rec.RecordID == "" {
		rec.RecordID = syntheticID(item)
	}
	rec.Invalid = fe
	return rec
}

// partialRecord reads the members of a refused record that are usable, for
// the quarantine's report.
func partialRecord(item value) UsageRecord {
	var rec UsageRecord
	for _, m := range item.members {
		switch {
		case m.name == "record_id" && m.val.kind == kindString:
			if id, err := requiredID(map[string]value{"record_id": m.val}, "", "record_id"); err == nil {
				rec.RecordID = id
			}
		case m.name == "workload_ref" && m.val.kind == kindString:
			rec.WorkloadRef = m.val.text
		case m.name == "units" && m.val.kind == kindNumber:
			rec.Units, _ = strconv.ParseInt(m.val.text, 10, 64)
		case m.name == "occurred_at":
			rec.OccurredAt, _ = timeMember(m.val, "")
		case m.name == "published_at":
			rec.PublishedAt, _ = timeMember(m.val, "")
		}
	}
	if len(rec.WorkloadRef) > maxUsageIDLen {
		rec.WorkloadRef = rec.WorkloadRef[:maxUsageIDLen]
	}
	return rec
}

// syntheticID names a record that has no usable record_id by a hash of
// what it holds.
func syntheticID(item value) string {
	h := sha256.New()
	writeValue(h, item)
	return "invalid-" + hex.EncodeToString(h.Sum(nil))[:32]
}

func writeValue(h interface{ Write([]byte) (int, error) }, v value) {
	fmt.Fprintf(h, "%d:%q", v.kind, v.text)
	for _, m := range v.members {
		fmt.Fprintf(h, "{%q=", m.name)
		writeValue(h, m.val)
	}
	for _, it := range v.items {
		h.Write([]byte{'['})
		writeValue(h, it)
	}
}
