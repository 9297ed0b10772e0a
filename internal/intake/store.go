package intake

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookline/hookline/internal/ddb"
)

// Errors returned by [Store.Accept].
var (
	// ErrConflict means the event ID was seen before with another payload.
	ErrConflict = errors.New("intake: same event id, different payload")
	// ErrUnavailable means DynamoDB or SQS failed; the provider must retry.
	ErrUnavailable = errors.New("intake: dependency unavailable")
	// ErrBusy means another delivery of the same event holds the send lease.
	ErrBusy = errors.New("intake: event is being enqueued by another delivery")
	// ErrTooLarge means the payload is over [MaxPayload]: no record holds
	// it, and a retry would be refused the same way.
	ErrTooLarge = errors.New("intake: payload too large for one record")
)

// MaxItemSize is DynamoDB's limit on one item: 400 KB, counting attribute
// names and values.
const MaxItemSize = 400 << 10

// itemOverhead bounds everything in an intake record except the payload:
// attribute names, the key (a 64-byte source and a 255-byte event ID, twice),
// timestamps, hash, lease, queue URL and message and request IDs.
const itemOverhead = 8 << 10

// MaxPayload is the largest payload an intake record can hold. One
// message body holds less ([MaxMessageBody]): a payload whose body would
// be longer is sent by reference to its record ([SendInput]). The
// receiver bounds each source's body limit by what one message body
// holds as it is, so only a payload SQS takes only encoded goes so.
const MaxPayload = MaxItemSize - itemOverhead

// DefaultRetention is how long an intake record is kept when
// [Config.Retention] is zero. It must not exceed the idempotency
// retention of the workers its records are replayed to
// (idempotency.DefaultRetention); infra/template.yaml's check holds that.
const DefaultRetention = 35 * 24 * time.Hour

// DefaultLease is the send lease when [Config.Lease] is zero: far longer
// than a record and a send take, short enough that a redelivery waits
// for it.
const DefaultLease = 2 * time.Second

// Statuses of an intake record. A record is written received and stays
// so: nothing marks it once its message is sent (docs/intake-ordering.md).
// StatusEnqueued is read only, on records that builds before that change
// marked.
const (
	StatusReceived = "received"
	StatusEnqueued = "enqueued"
)

// Outcome says what Accept did.
type Outcome string

// Outcomes of [Store.Accept].
const (
	Accepted  Outcome = "accepted"  // enqueued now, for the first time
	Duplicate Outcome = "duplicate" // seen before: enqueued again, or marked enqueued by an older build
)

// DynamoDBAPI is the DynamoDB client the store uses.
type DynamoDBAPI = ddb.API

// SQSAPI is the part of the SQS client the store uses.
type SQSAPI interface {
	SendMessage(context.Context, *sqs.SendMessageInput, ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// Config configures a [Store].
type Config struct {
	DynamoDB DynamoDBAPI
	SQS      SQSAPI
	Table    string
	// Retention keeps the raw payload for replay. It must outlast provider
	// retries (days) plus DLQ retention (14 days); default 35 days.
	Retention time.Duration
	// Lease is how long one delivery may take between record and send
	// before a redelivery may take over and send again (default 2s). A
	// holder slower than that costs a second message, never a loss.
	Lease time.Duration
	// BusyWait is how long a redelivery waits for a live lease to run out
	// before answering ErrBusy (default: 1.25 × Lease).
	BusyWait time.Duration
	Now      func() time.Time
	Logger   *slog.Logger
}

// Validate reports every problem with cfg at once.
func (c Config) Validate() error {
	var errs []error
	if c.DynamoDB == nil {
		errs = append(errs, errors.New("intake: DynamoDB client is required"))
	}
	if c.SQS == nil {
		errs = append(errs, errors.New("intake: SQS client is required"))
	}
	if c.Table == "" {
		errs = append(errs, errors.New("intake: table name is required"))
	}
	return errors.Join(errs...)
}

// Store records and enqueues events.
type Store struct {
	cfg Config
}

// New validates cfg and builds a Store.
func New(cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Retention <= 0 {
		cfg.Retention = DefaultRetention
	}
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.BusyWait <= 0 {
		cfg.BusyWait = cfg.Lease + cfg.Lease/4
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Store{cfg: cfg}, nil
}

// Event is one verified webhook.
type Event struct {
	Source            string
	EventID           string
	QueueURL          string
	Payload           []byte
	ProviderTimestamp time.Time
	RequestID         string
	// DigestID means EventID is a digest of the signed bytes, so a
	// record under it is this event: a redelivery whose payload differs
	// only in what no signature covers (a header's ID kept in it) is a
	// duplicate, not a conflict.
	DigestID bool
	// LegacyEventID is the ID an earlier build stored this event under,
	// and LegacyPayload the payload it stored then. When both are set
	// and the event has no record under EventID, a record under the
	// legacy ID whose payload hash is LegacyPayload's is this event: it
	// is answered from that record and no new one is written. When
	// LegacyEventID is EventID, a record under it of LegacyPayload is
	// this event in the earlier build's form: a duplicate, not a
	// conflict.
	LegacyEventID string
	LegacyPayload []byte
}

// Record is the stored intake record.
type Record struct {
	PK string `dynamodbav:"pk"`
	// Source is not stored on records written since the index was
	// sharded (see [IndexByShardReceived]): it is the key's prefix.
	Source string `dynamodbav:"source,omitempty"`
	// SourceShard is the record's partition of [IndexByShardReceived].
	SourceShard       string `dynamodbav:"source_shard,omitempty"`
	EventID           string `dynamodbav:"event_id"`
	ReceivedAt        string `dynamodbav:"received_at"`
	ProviderTimestamp string `dynamodbav:"provider_ts,omitempty"`
	Verification      string `dynamodbav:"verification"`
	PayloadSHA256     string `dynamodbav:"payload_sha256"`
	Payload           string `dynamodbav:"payload"`
	Status            string `dynamodbav:"status"`
	QueueURL          string `dynamodbav:"queue_url"`
	MessageID         string `dynamodbav:"message_id,omitempty"`
	EnqueuedAt        string `dynamodbav:"enqueued_at,omitempty"`
	LeaseUntil        int64  `dynamodbav:"lease_until"`
	LeaseToken        string `dynamodbav:"lease_token"`
	FirstRequestID    string `dynamodbav:"first_request_id,omitempty"`
	ExpiresAt         int64  `dynamodbav:"expires_at"`
	// Attribution and the fields after it are set by the spend worker on a
	// usage event's record ([Attributions]); empty until it has run.
	Attribution         Attribution `dynamodbav:"attribution,omitempty"`
	AttributionWorkload string      `dynamodbav:"attribution_workload,omitempty"`
	AttributionReason   string      `dynamodbav:"attribution_reason,omitempty"`
	AttributedAt        string      `dynamodbav:"attributed_at,omitempty"`
	// Conflicts counts the deliveries of this event ID whose payload
	// differed from the record's, which a usage source acknowledges
	// ([Store.NoteConflict]); the fields after it are the last one's.
	Conflicts       int64  `dynamodbav:"conflicts,omitempty"`
	ConflictAt      string `dynamodbav:"conflict_at,omitempty"`
	ConflictSHA256  string `dynamodbav:"conflict_sha256,omitempty"`
	ConflictPayload string `dynamodbav:"conflict_payload,omitempty"`
}

// Result is what [Store.Accept] reports.
type Result struct {
	Outcome   Outcome
	MessageID string
	// Calls counts the AWS calls this delivery made.
	Calls int
	// ReceivedAt is when the event was first recorded.
	ReceivedAt time.Time
}

// Key returns the intake key of an event.
func Key(source, eventID string) string { return source + "#" + eventID }

// fill sets what a stored record leaves to its key: the source, which a
// record written since the index was sharded does not store (source
// names have no "#").
func (r *Record) fill() {
	if r.Source == "" {
		r.Source, _, _ = strings.Cut(r.PK, "#")
	}
}

// PayloadHash returns the hex SHA-256 of a payload.
func PayloadHash(p []byte) string {
	sum := sha256.Sum256(p)
	return hex.EncodeToString(sum[:])
}

func newToken() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

const timeLayout = "2006-01-02T15:04:05.000Z07:00"

func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

func parseTime(s string) time.Time {
	t, _ := time.Parse(timeLayout, s)
	return t
}

func unavailable(op string, err error) error {
	return fmt.Errorf("%s: %w: %w", op, ErrUnavailable, err)
}

// Get reads one record with a consistent read.
func (s *Store) Get(ctx context.Context, source, eventID string) (Record, bool, error) {
	rec, found, err := ddb.Get[Record](ctx, s.cfg.DynamoDB, &dynamodb.GetItemInput{
		TableName: aws.String(s.cfg.Table), Key: recordKey(Key(source, eventID)), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Record{}, false, unavailable("get intake", err)
	}
	rec.fill()
	return rec, found, nil
}

// recordKey is the key of the intake record pk.
func recordKey(pk string) map[string]ddbtypes.AttributeValue {
	return map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: pk}}
}

// messageAttributes are sent with every message so consumers and the ops
// CLI can tell what a message is without parsing its body.
func messageAttributes(rec Record) map[string]sqstypes.MessageAttributeValue {
	str := func(v string) sqstypes.MessageAttributeValue {
		return sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
	}
	attrs := map[string]sqstypes.MessageAttributeValue{
		"source":      str(rec.Source),
		"event_id":    str(rec.EventID),
		"received_at": str(rec.ReceivedAt),
	}
	if rec.ProviderTimestamp != "" {
		attrs["provider_ts"] = str(rec.ProviderTimestamp)
	}
	return attrs
}
