package receiver

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/hookline/hookline/internal/emf"
	"github.com/hookline/hookline/internal/intake"
	"github.com/hookline/hookline/internal/usagein"
	"github.com/hookline/hookline/pkg/secrets"
	"github.com/hookline/hookline/pkg/webhook"
)

// Intake is what the receiver needs from [intake.Store].
type Intake interface {
	Accept(ctx context.Context, ev intake.Event) (intake.Result, error)
	// NoteConflict records an acknowledged conflict of a usage event on
	// its intake record.
	NoteConflict(ctx context.Context, ev intake.Event) (bool, error)
}

// Source is one configured source: its spec, where its secrets come from
// and where its events go.
type Source struct {
	Spec     webhook.SourceSpec
	QueueURL string
	// Secrets supplies the source's active secrets, looked up by
	// Spec.SecretID (Secrets Manager) or Spec.SecretEnv (environment).
	// A scheme that takes no secret (paypal, mollie) needs none.
	Secrets secrets.Provider
	// Certs fetches PayPal's signing certificates; nil builds one for the
	// spec's pinned cert_hosts with the system roots.
	Certs *webhook.CertFetcher
}

// Config configures a [Handler].
type Config struct {
	Sources []Source
	Intake  Intake
	Metrics *emf.Logger
	Logger  *slog.Logger
	Now     func() time.Time
	// MaxEventAge bounds how old an event whose time is signed and held
	// to no replay window ([webhook.Item.TimeSigned]) may be. An older
	// one is acknowledged and dropped: its intake record, and the
	// worker's idempotency key, may have expired, so accepting it could
	// charge it again. It must be below the intake retention; zero is
	// [DefaultMaxEventAge].
	MaxEventAge time.Duration
	// Usage are the usage sources' mappings (USAGE_MAPPINGS): how each
	// reads its bodies into records. A usage source without one reads
	// usage.recorded.
	Usage *usagein.Mappings
}

// DefaultMaxEventAge is the intake's default retention less a day, the
// margin for the provider's clock and ours.
const DefaultMaxEventAge = intake.DefaultRetention - 24*time.Hour

// Validate reports every problem at once.
func (c Config) Validate() error {
	var errs []error
	if len(c.Sources) == 0 {
		errs = append(errs, errors.New("receiver: no sources configured"))
	}
	if c.Intake == nil {
		errs = append(errs, errors.New("receiver: an intake store is required"))
	}
	if c.MaxEventAge < 0 {
		errs = append(errs, fmt.Errorf("receiver: max event age %s is negative", c.MaxEventAge))
	}
	for _, s := range c.Sources {
		if s.QueueURL == "" {
			errs = append(errs, fmt.Errorf("receiver: source %q has no queue URL", s.Spec.Name))
		}
		if s.Secrets == nil && s.Spec.Scheme.NeedsSecret() {
			errs = append(errs, fmt.Errorf("receiver: source %q has no secrets provider", s.Spec.Name))
		}
		if err := checkMaxBody(s.Spec); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

type source struct {
	spec     webhook.SourceSpec
	queueURL string
	secrets  secrets.Provider
	verifier *webhook.Verifier
}

// Handler handles API Gateway HTTP API (v2) webhook requests.
type Handler struct {
	sources     map[string]source
	intake      Intake
	metrics     *emf.Logger
	log         *slog.Logger
	now         func() time.Time
	maxEventAge time.Duration
	usage       *usagein.Mappings
}

// New validates cfg and builds a Handler.
func New(cfg Config) (*Handler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	h := &Handler{sources: map[string]source{}, intake: cfg.Intake, metrics: cfg.Metrics, log: cfg.Logger, now: cfg.Now,
		maxEventAge: cmp.Or(cfg.MaxEventAge, DefaultMaxEventAge), usage: cfg.Usage}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.now == nil {
		h.now = time.Now
	}
	for _, s := range cfg.Sources {
		v, err := webhook.NewVerifier(webhook.VerifierConfig{Scheme: s.Spec.Scheme, Tolerance: s.Spec.Tolerance, MaxBody: MaxBody(s.Spec),
			Now: h.now, Options: s.Spec.Options(), Certs: s.Certs, OwnReader: s.Spec.Queue == UsageQueue})
		if err != nil {
			return nil, fmt.Errorf("receiver: source %q: %w", s.Spec.Name, err)
		}
		h.sources[s.Spec.Name] = source{spec: s.Spec, queueURL: s.QueueURL, secrets: s.Secrets, verifier: v}
	}
	return h, nil
}

// Handle is the Lambda entry point.
func (h *Handler) Handle(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	name := req.PathParameters["source"]
	src, ok := h.sources[name]
	if !ok {
		// The path segment is the caller's text: it never becomes a metric
		// dimension (each new value is a new CloudWatch metric, a cost the
		// caller would control), and only a bounded, quoted prefix is logged.
		h.log.WarnContext(ctx, "webhook for an unknown source", "path_source", boundedQuote(name, 64))
		return h.reject(ctx, UnknownSource, errUnknownSource), nil
	}
	if req.RequestContext.HTTP.Method != http.MethodPost {
		return h.reject(ctx, name, errMethod), nil
	}
	body, err := rawBody(req, src.verifier.MaxBody())
	if err != nil {
		return h.reject(ctx, name, err), nil
	}
	var keys []string
	if src.spec.Scheme.NeedsSecret() {
		if keys, err = src.secrets.Secrets(ctx, secretRef(src.spec)); err != nil {
			h.log.ErrorContext(ctx, "webhook secrets unavailable", "source", name, "err", err)
			return h.reject(ctx, name, fmt.Errorf("%w: %w", errUnavailable, err)), nil
		}
	}
	d, err := src.verifier.VerifyDelivery(webhook.HeaderMap(req.Headers), body, keys)
	if err != nil {
		return h.reject(ctx, name, err), nil
	}
	if !utf8.Valid(body) {
		// An SQS message body is text: the SDK would send U+FFFD for each
		// invalid byte, and the worker would get a body nobody signed.
		return h.reject(ctx, name, fmt.Errorf("body is not UTF-8: %w", webhook.ErrMalformedBody)), nil
	}
	if src.spec.Queue == UsageQueue {
		if d, err = h.readUsage(src, req, body, d); err != nil {
			return h.reject(ctx, name, err), nil
		}
	}
	return h.acceptDelivery(ctx, src, d, req.RequestContext.RequestID), nil
}

// UnknownSource is the one source dimension of every metric about a request
// whose source is not configured or missing. A configured source name starts
// with a letter or digit, so it can never be this.
const UnknownSource = "_unknown"

// Metrics the receiver emits, with the dimension Source (and Reason on
// refusals).
const (
	MetricAccepted      = "WebhookAccepted"
	MetricDuplicate     = "WebhookDuplicate"
	MetricRejected      = "WebhookRejected" // refused with a 4xx other than 409
	MetricConflict      = "WebhookConflict" // 409: the event ID arrived with another body
	MetricFailed        = "WebhookFailed"   // 5xx: a dependency failed; the provider retries
	MetricEventToIntake = "EventToIntake"   // the provider's timestamp to the intake record
	// MetricItemRejected counts batch items refused on their own while
	// the rest of the batch was accepted (dimensions Source and Reason).
	MetricItemRejected = "WebhookItemRejected"
	// MetricTooOld counts items acknowledged and dropped because their
	// signed time is older than [Config.MaxEventAge] (dimension Source).
	MetricTooOld = "WebhookTooOld"
	// MetricUsageConflict counts usage events acknowledged although their
	// ID came with another payload than the one counted: a producer's
	// revised value, which is not counted (dimension Source). The
	// template alarms on it.
	MetricUsageConflict = "UsageConflict"
)

// outcomeMetrics names the metric of each intake outcome.
var outcomeMetrics = map[intake.Outcome]string{intake.Accepted: MetricAccepted, intake.Duplicate: MetricDuplicate}

// boundedQuote quotes at most n bytes of s.
func boundedQuote(s string, n int) string {
	if len(s) > n {
		return strconv.Quote(s[:n]) + "..."
	}
	return strconv.Quote(s)
}

func secretRef(s webhook.SourceSpec) string {
	if s.SecretID != "" {
		return s.SecretID
	}
	return s.SecretEnv
}

// rawBody returns the body bytes exactly as sent, refusing an oversized one
// before decoding it.
func rawBody(req events.APIGatewayV2HTTPRequest, limit int64) ([]byte, error) {
	if n, err := strconv.ParseInt(req.Headers["content-length"], 10, 64); err == nil && n > limit {
		return nil, webhook.ErrBodyTooLarge
	}
	if !req.IsBase64Encoded {
		if int64(len(req.Body)) > limit {
			return nil, webhook.ErrBodyTooLarge
		}
		return []byte(req.Body), nil
	}
	if int64(base64.StdEncoding.DecodedLen(len(req.Body))) > limit+2 {
		return nil, webhook.ErrBodyTooLarge
	}
	b, err := base64.StdEncoding.DecodeString(req.Body)
	if err != nil {
		return nil, fmt.Errorf("base64 body: %w", webhook.ErrMalformedBody)
	}
	if int64(len(b)) > limit {
		return nil, webhook.ErrBodyTooLarge
	}
	return b, nil
}

// UsageQueue is the queue the spend worker reads. A source that feeds it
// sends usage, and every body it sends is read under its usage mapping
// ([Handler.readUsage]) before it is accepted: the worker can only count
// what the door read.
const UsageQueue = usagein.UsageQueue

// tooOld is the outcome of an item whose signed time is older than the
// receiver's max event age: acknowledged, and neither recorded nor
// enqueued.
const tooOld intake.Outcome = "too_old"

// conflictKept is the outcome of a usage event whose ID came with
// another payload than the one recorded: acknowledged, the conflict
// noted on the intake record, and nothing enqueued ([Handler.keepFirst]).
const conflictKept intake.Outcome = "conflict"

// acceptDelivery records and enqueues every item of a verified delivery,
// one intake record and one queue message each, and answers only when all
// of them are durable: with the provider's acknowledgement, or the
// receiver's JSON. A failed item fails the request (the provider resends
// the batch, and the items already durable are duplicates then). In a
// batch, an item refused on its own, or whose ID came back with another
// payload, is counted and logged, and does not hold the rest back. An
// item too old for the intake to remember is dropped
// ([Handler.dropTooOld]).
func (h *Handler) acceptDelivery(ctx context.Context, src source, d webhook.Delivery, requestID string) events.APIGatewayV2HTTPResponse {
	name := src.spec.Name
	batch := len(d.Items)+len(d.Refused) > 1
	var refused []refusal
	for _, r := range d.Refused {
		refused = h.refuseItem(ctx, name, r.Index, r.Err, refused)
	}
	counts := map[intake.Outcome]int{}
	for i, it := range d.Items {
		if h.dropTooOld(ctx, name, it) {
			counts[tooOld]++
			continue
		}
		res, err := h.acceptItem(ctx, src, it, requestID)
		if err != nil && src.spec.Queue == UsageQueue && errors.Is(err, intake.ErrConflict) {
			res, err = h.keepFirst(ctx, src, it, requestID)
		}
		if err != nil && batch && errors.Is(err, intake.ErrConflict) {
			refused = h.refuseItem(ctx, name, i, err, refused)
			continue
		}
		if err != nil {
			return h.reject(ctx, name, err)
		}
		counts[res.Outcome]++
	}
	if d.Ack.Body != "" {
		return events.APIGatewayV2HTTPResponse{StatusCode: cmp.Or(d.Ack.Status, http.StatusOK), Body: d.Ack.Body,
			Headers: map[string]string{"Content-Type": cmp.Or(d.Ack.ContentType, "text/plain")}}
	}
	if !batch {
		for outcome := range counts {
			return jsonResponse(http.StatusOK, `{"status":"`+string(outcome)+`"}`, nil)
		}
	}
	return jsonResponse(http.StatusOK, batchBody(counts[intake.Accepted], counts[intake.Duplicate],
		len(d.Items)+len(d.Refused)-counts[intake.Accepted]-counts[intake.Duplicate]-counts[tooOld]-counts[conflictKept],
		counts[tooOld], counts[conflictKept], refused), nil)
}

// dropTooOld drops, counts and logs an item whose time is signed, held
// to no replay window, and older than the max event age, and reports
// whether it did. Its intake
// record and the worker's idempotency key may have expired, so only a
// replay of captured bytes can be this old, and accepting it could
// charge the event again: it is dropped. It is answered 200 all the
// same, never a 4xx, which a provider would retry for days (and Adyen
// would hold the merchant's later webhooks behind). The log names the
// event, never its payload.
func (h *Handler) dropTooOld(ctx context.Context, source string, it webhook.Item) bool {
	age := h.now().Sub(it.Timestamp)
	if !it.TimeSigned || age <= h.maxEventAge {
		return false
	}
	h.metrics.Count(MetricTooOld, 1, emf.Dims{"Source": source})
	h.log.WarnContext(ctx, "webhook too old: acknowledged and dropped", "source", source, "event_id", it.EventID,
		"event_time", it.Timestamp, "age", age.Round(time.Second).String(), "max_event_age", h.maxEventAge.String(),
		"request_id", lambdaRequestID(ctx))
	return true
}

// refuseItem counts and logs one batch item refused on its own, and
// appends to refused what the answer says of it.
func (h *Handler) refuseItem(ctx context.Context, source string, index int, err error, refused []refusal) []refusal {
	a := answerFor(h.sources[source].spec.Scheme, err)
	h.metrics.Count(MetricItemRejected, 1, emf.Dims{"Source": source, "Reason": a.code})
	h.log.WarnContext(ctx, "webhook batch item refused", "source", source, "index", index, "reason", a.code,
		"field", a.field, "why", a.reason, "request_id", lambdaRequestID(ctx))
	return append(refused, refusal{Index: index, Error: a.code, Field: a.field, Reason: a.reason})
}

// keepFirst acknowledges a usage event whose ID the intake holds with
// another payload: a producer re-sent the event, under the same
// CloudEvents (source, id) or delivery ID, with a revised value. A 409
// would be retried for days by Standard Webhooks and Svix senders, and
// the identity already counted the first value, which stays counted. The
// conflict is recorded on the event's intake record, where event explain
// shows it, before the 2xx (a failed write is a 503, and the sender's
// retry records it), and counted as UsageConflict, which the template
// alarms on. The log names the event, never its payload.
func (h *Handler) keepFirst(ctx context.Context, src source, it webhook.Item, requestID string) (intake.Result, error) {
	name := src.spec.Name
	found, err := h.intake.NoteConflict(ctx, intake.Event{Source: name, EventID: it.EventID, Payload: it.Payload, RequestID: requestID})
	if err != nil {
		return intake.Result{}, err
	}
	h.metrics.Count(MetricUsageConflict, 1, emf.Dims{"Source": name})
	h.log.WarnContext(ctx, "usage event re-sent with another value: acknowledged, the first value counts", "source", name,
		"event_id", it.EventID, "noted", found, "request_id", lambdaRequestID(ctx))
	return intake.Result{Outcome: conflictKept}, nil
}

// acceptItem records and enqueues one item.
func (h *Handler) acceptItem(ctx context.Context, src source, it webhook.Item, requestID string) (intake.Result, error) {
	ev := intake.Event{
		Source: src.spec.Name, EventID: it.EventID, QueueURL: src.queueURL, Payload: it.Payload,
		ProviderTimestamp: it.Timestamp, RequestID: requestID, DigestID: it.DigestID,
	}
	if it.LegacyEventID != "" {
		// Builds before the digest stored this event under its unsigned
		// header ID; a retry of a delivery they accepted is answered from
		// that record (see intake.Store.Accept for what this cannot catch).
		ev.LegacyEventID, ev.LegacyPayload = it.LegacyEventID, it.LegacyPayload()
	}
	res, err := h.intake.Accept(ctx, ev)
	if err != nil {
		return res, err
	}
	dims := emf.Dims{"Source": src.spec.Name}
	h.metrics.Count(outcomeMetrics[res.Outcome], 1, dims)
	if res.Outcome == intake.Accepted && !it.Timestamp.IsZero() {
		h.metrics.Duration(MetricEventToIntake, h.now().Sub(it.Timestamp), dims)
	}
	h.log.InfoContext(ctx, "webhook "+string(res.Outcome), "source", src.spec.Name, "event_id", it.EventID,
		"message_id", res.MessageID, "aws_calls", res.Calls, "request_id", lambdaRequestID(ctx))
	return res, nil
}

func lambdaRequestID(ctx context.Context) string {
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		return lc.AwsRequestID
	}
	return ""
}
