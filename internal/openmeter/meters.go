package openmeter

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/hookline/hookline/internal/paced"
	"github.com/hookline/hookline/internal/sums"
)

// Reader is a [sums.Reader] over OpenMeter's meter query: the provider's
// sums per bucket, a cross-check at settle of what the per-record export
// counted.
type Reader struct {
	call caller
}

var _ sums.Reader = (*Reader)(nil)

// NewReader returns a Reader. Only cfg's BaseURL, APIKey, Attempts,
// Timeout, Rate, Logger, HTTP, Wait and Now are used.
func NewReader(cfg Config) (*Reader, error) {
	cfg.defaults()
	if u, err := url.Parse(cfg.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: BaseURL %q is not an http(s) URL", ErrInvalidConfig, cfg.BaseURL)
	}
	call, err := newCaller(cfg)
	if err != nil {
		return nil, err
	}
	return &Reader{call: call}, nil
}

// Paced is the paced client the reader calls through, for another reader
// of the same OpenMeter to share ([Config.Paced]).
func (r *Reader) Paced() *paced.Client { return r.call.call }

// MeterQuery is the answer of GET /api/v1/meters/{meterIdOrSlug}/query
// (the spec's MeterQueryResult).
type MeterQuery struct {
	From       *time.Time `json:"from,omitempty"`
	To         *time.Time `json:"to,omitempty"`
	WindowSize string     `json:"windowSize,omitempty"`
	Data       []MeterRow `json:"data"`
}

// MeterRow is one window's value (the spec's MeterQueryRow).
type MeterRow struct {
	Value       float64            `json:"value"`
	WindowStart time.Time          `json:"windowStart"`
	WindowEnd   time.Time          `json:"windowEnd"`
	Subject     *string            `json:"subject"`
	CustomerID  string             `json:"customerId,omitempty"`
	GroupBy     map[string]*string `json:"groupBy"`
}

// MeterQueryEndpoint is the meter query's path template: the key of its
// pace, and its name in errors and logs.
const MeterQueryEndpoint = "/api/v1/meters/{meter}/query"

// MeterQueryPath is the meter query's path for a meter's ID or slug.
func MeterQueryPath(meter string) string {
	return "/api/v1/meters/" + url.PathEscape(meter) + "/query"
}

// windowSizes are OpenMeter's window sizes by bucket width.
var windowSizes = map[time.Duration]string{time.Minute: "MINUTE", time.Hour: "HOUR", 24 * time.Hour: "DAY"}

// Sums reads q's meter for the subject q.Ref, in windows of q.Width in
// UTC, grouped by subject, from q.Start to q.End. OpenMeter omits empty
// windows; a row of another subject or outside [Start, End) is left out.
func (r *Reader) Sums(ctx context.Context, q sums.Query) ([]sums.Sum, error) {
	size, ok := windowSizes[q.Width]
	if !ok {
		return nil, fmt.Errorf("%w: width %s: OpenMeter's windows are a minute, an hour or a day", sums.ErrRead, q.Width)
	}
	v := url.Values{"from": {q.Start.UTC().Format(time.RFC3339)}, "to": {q.End.UTC().Format(time.RFC3339)},
		"windowSize": {size}, "windowTimeZone": {"UTC"}, "subject": {q.Ref}, "groupBy": {"subject"}}
	var res MeterQuery
	if _, err := r.call.get(ctx, MeterQueryEndpoint, MeterQueryPath(q.Meter.ProviderMeter), v, &res); err != nil {
		return nil, fmt.Errorf("%w: meter %s subject %s: %w", sums.ErrRead, q.Meter.ProviderMeter, q.Ref, err)
	}
	var out []sums.Sum
	for _, row := range res.Data {
		if row.Subject != nil && *row.Subject != q.Ref || row.WindowStart.Before(q.Start) || !row.WindowStart.Before(q.End) {
			continue
		}
		out = append(out, sums.Sum{Start: row.WindowStart.UTC(), End: row.WindowEnd.UTC(), Value: row.Value})
	}
	return out, nil
}
