package providersim

import (
	"errors"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hookline/hookline/internal/sums"
)

// ErrInvalidOpenAI reports OpenAI usage, a cost or a fault the face
// cannot take.
var ErrInvalidOpenAI = errors.New("providersim: invalid OpenAI usage")

// OpenAIAdminKey is an admin key the OpenAI face accepts: any key that
// starts with sk-admin- does, unless [Sim.SetOpenAIAdminKey] names one.
const OpenAIAdminKey = "sk-admin-hookline-local"

// Defaults of the OpenAI face.
const (
	// DefaultOpenAICurrency is the currency of a cost that names none.
	DefaultOpenAICurrency = "usd"
	// DefaultOpenAIRetryAfter is the retry-after-ms of a 429 the face
	// answers by [Sim.FailOpenAICalls] when none is asked for.
	DefaultOpenAIRetryAfter = time.Second
)

// OpenAIUsage is usage of one OpenAI project at one time on one usage
// endpoint (completions, embeddings, ...): the result fields it adds,
// such as {"input_tokens": 1200, "output_tokens": 300}.
//
// OpenAI's organization usage face (GET /v1/organization/usage/{endpoint}
// and GET /v1/organization/costs) answers the sums per project and UTC
// minute, hour or day bucket (costs: day) statefully, with the faults of
// an eventually consistent aggregate: a lag before usage shows
// ([Sim.SetOpenAILag]), revisions up and down ([Sim.ReviseOpenAIUsage],
// [Sim.ReviseOpenAICost]),
// missing buckets ([Sim.AddOpenAIGap]), pages that end early, has_more
// true on a page shorter than its limit ([Sim.SetOpenAIPageSize]), float
// noise in costs ([Sim.SetOpenAICostNoise]) and 429s
// ([Sim.FailOpenAICalls]). Every time is the simulator's clock and every
// random choice is seeded. [OpenAISimPath] serves the administration.
//
// Where OpenAI documents nothing the face chooses and says so: every
// bucket of the range is served, with empty results when nothing shows;
// next_page is an opaque cursor that carries the next bucket's start;
// end_time defaults to the clock's bucket end; a 429 carries
// retry-after-ms.
type OpenAIUsage struct {
	Endpoint string           `json:"endpoint"`
	Project  string           `json:"project"`
	At       time.Time        `json:"at,omitzero"`
	Fields   map[string]int64 `json:"fields"`
}

// OpenAICost is a cost of one OpenAI project at one time: Value is a
// non-negative decimal ("0.0125") in Currency (default usd).
type OpenAICost struct {
	Project  string    `json:"project"`
	At       time.Time `json:"at,omitzero"`
	Value    string    `json:"value"`
	Currency string    `json:"currency,omitempty"`
	LineItem string    `json:"line_item,omitempty"`
}

// OpenAIGap is a [Gap] of OpenAI's face, narrowed by Endpoint and
// Project.
type OpenAIGap = Gap

// OpenAICallCounts counts the calls of the OpenAI face.
type OpenAICallCounts struct {
	Usage       int `json:"usage"`
	Costs       int `json:"costs"`
	RateLimited int `json:"rate_limited"`
	// ShortPages counts pages that ended early: has_more with fewer
	// buckets than the limit.
	ShortPages int `json:"short_pages"`
	// ServerErrors counts the 5xx answered by [Sim.FailOpenAI].
	ServerErrors int `json:"server_errors"`
}

// openaiRecord is one usage or cost as recorded, or a revision.
type openaiRecord struct {
	endpoint, project string
	at, received      time.Time
	fields            map[string]int64
	cost              *big.Rat
	currency          string
	revision          bool
}

// openaiBook is the OpenAI face's state.
type openaiBook struct {
	faults *usageFaults

	mu      sync.Mutex
	key     string
	records []*openaiRecord
	calls   OpenAICallCounts // Usage and Costs; the faults count the rest
}

func (b *openaiBook) init(seed uint64) {
	b.faults = newUsageFaults(faultLag|faultGaps|faultShortPages|faultNoise|faultCalls, seed, DefaultOpenAIRetryAfter, 0)
	b.faults.millis = true
}

// openai is s's OpenAI face.
func (s *core) openai() *openaiBook { return &s.openaiFace }

// AddOpenAIUsage records u, at the clock's time when u.At is zero. Its
// endpoint must be a usage endpoint and its fields the endpoint's.
func (v *Sim) AddOpenAIUsage(u OpenAIUsage) error {
	ep, ok := sums.OpenAIEndpoints[u.Endpoint]
	if !ok || ep.Money {
		return fmt.Errorf("%w: %q is not a usage endpoint", ErrInvalidOpenAI, u.Endpoint)
	}
	if u.Project == "" || len(u.Fields) == 0 {
		return fmt.Errorf("%w: a project and fields are required", ErrInvalidOpenAI)
	}
	for f, n := range u.Fields {
		if !slices.Contains(ep.Fields, f) || n < 0 {
			return fmt.Errorf("%w: field %q = %d is not a count of endpoint %s", ErrInvalidOpenAI, f, n, u.Endpoint)
		}
	}
	v.core.openai().add(&openaiRecord{endpoint: u.Endpoint, project: u.Project, at: u.At,
		fields: maps.Clone(u.Fields)}, v.core.now())
	return nil
}

// AddOpenAICost records c, at the clock's time when c.At is zero.
func (v *Sim) AddOpenAICost(c OpenAICost) error {
	value, ok := parseDecimal(c.Value)
	if c.Project == "" || !ok {
		return fmt.Errorf("%w: a cost needs a project and a non-negative decimal value", ErrInvalidOpenAI)
	}
	cur := c.Currency
	if cur == "" {
		cur = DefaultOpenAICurrency
	}
	v.core.openai().add(&openaiRecord{endpoint: sums.OpenAICosts, project: c.Project, at: c.At,
		cost: value, currency: cur}, v.core.now())
	return nil
}

// ReviseOpenAIUsage changes, at once and whatever the lag, field of
// endpoint for project by by (up when positive, down when negative) in
// the buckets that hold at, as OpenAI may revise a past bucket.
func (v *Sim) ReviseOpenAIUsage(endpoint, project string, at time.Time, field string, by int64) error {
	ep, ok := sums.OpenAIEndpoints[endpoint]
	if !ok || ep.Money || !slices.Contains(ep.Fields, field) || project == "" || by == 0 || at.IsZero() {
		return fmt.Errorf("%w: a revision needs a usage endpoint, its field, a project, a time and a change", ErrInvalidOpenAI)
	}
	v.core.openai().add(&openaiRecord{endpoint: endpoint, project: project, at: at,
		fields: map[string]int64{field: by}, revision: true}, v.core.now())
	return nil
}

// ReviseOpenAICost changes, at once and whatever the lag, project's costs
// of the day that holds at by by, a signed decimal ("-0.25" revises
// down), as OpenAI may correct a day's costs.
func (v *Sim) ReviseOpenAICost(project string, at time.Time, by string) error {
	value, ok := parseDecimal(strings.TrimPrefix(by, "-"))
	if project == "" || at.IsZero() || !ok || value.Sign() == 0 {
		return fmt.Errorf("%w: a cost revision needs a project, a time and a non-zero decimal", ErrInvalidOpenAI)
	}
	if strings.HasPrefix(by, "-") {
		value.Neg(value)
	}
	v.core.openai().add(&openaiRecord{endpoint: sums.OpenAICosts, project: project, at: at, cost: value,
		currency: DefaultOpenAICurrency, revision: true}, v.core.now())
	return nil
}

func (b *openaiBook) add(r *openaiRecord, now time.Time) {
	r.received = now
	if r.at.IsZero() {
		r.at = now
	}
	r.at = r.at.UTC().Truncate(time.Second)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.records = append(b.records, r)
}

// OpenAIUsageSum is the truth of field of endpoint for project over
// [start, end): every usage and revision, whatever lag and gaps show.
func (v *Sim) OpenAIUsageSum(endpoint, project, field string, start, end time.Time) int64 {
	b := v.core.openai()
	b.mu.Lock()
	defer b.mu.Unlock()
	var n int64
	for _, r := range b.records {
		if r.endpoint == endpoint && r.project == project && !r.at.Before(start) && r.at.Before(end) {
			n += r.fields[field]
		}
	}
	return n
}

// OpenAICostSum is the truth of project's costs over [start, end), as a
// decimal.
func (v *Sim) OpenAICostSum(project string, start, end time.Time) string {
	b := v.core.openai()
	b.mu.Lock()
	defer b.mu.Unlock()
	sum := new(big.Rat)
	for _, r := range b.records {
		if r.cost != nil && r.project == project && !r.at.Before(start) && r.at.Before(end) {
			sum.Add(sum, r.cost)
		}
	}
	return decimalText(sum)
}

// SetOpenAILag makes usage and costs show only lag after they arrived.
func (v *Sim) SetOpenAILag(lag time.Duration) { v.core.openai().faults.setLag("", lag) }

// AddOpenAIGap leaves buckets out (empty results) until g.Until or
// [Sim.ClearOpenAIGaps]. Meter and Customer, Stripe's, must be empty.
func (v *Sim) AddOpenAIGap(g OpenAIGap) error {
	if err := v.core.openai().faults.addGap(g.gap(g.Meter+g.Customer == "", g.Endpoint, g.Project)); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidOpenAI, err)
	}
	return nil
}

// ClearOpenAIGaps closes every gap.
func (v *Sim) ClearOpenAIGaps() { v.core.openai().faults.clearGaps() }

// SetOpenAIPageSize makes every page hold at most n buckets, whatever its
// limit, with has_more true while buckets remain: pages that end early.
// 0 lifts it.
func (v *Sim) SetOpenAIPageSize(n int) { v.core.openai().faults.setPageSize(n) }

// FailOpenAICalls makes the next n calls answer 429 with retry-after-ms
// of after (0: [DefaultOpenAIRetryAfter]; negative: no header).
func (v *Sim) FailOpenAICalls(n int, after time.Duration) {
	_ = v.FailOpenAI(CallFault{Next: n, RetryAfter: after})
}

// FailOpenAI makes the next c.Next calls answer c.Status: 429 (the
// default) with retry-after-ms of c.RetryAfter as [Sim.FailOpenAICalls]
// says, or a 5xx with a server_error. The face has one endpoint for
// faults: c.Endpoint must be empty.
func (v *Sim) FailOpenAI(c CallFault) error {
	f := v.core.openai().faults
	err := f.validEndpoint(c.Endpoint)
	if err == nil {
		err = f.program(c)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidOpenAI, err)
	}
	return nil
}

// SetOpenAICostNoise makes costs render amount.value as the float64 sum
// of the costs in arrival order (0.1 + 0.2 gives 0.30000000000000004),
// one unit in the last place off when that sum is exact. Off, the exact
// decimal.
func (v *Sim) SetOpenAICostNoise(on bool) { v.core.openai().faults.setNoise(on) }

// SetOpenAIAdminKey makes the face accept only key ("" accepts any
// sk-admin- key).
func (v *Sim) SetOpenAIAdminKey(key string) { v.core.openai().set(func(b *openaiBook) { b.key = key }) }

// OpenAICalls returns the counts of the face's calls.
func (v *Sim) OpenAICalls() OpenAICallCounts {
	b := v.core.openai()
	c := b.faults.counts()
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.calls
	out.RateLimited, out.ServerErrors, out.ShortPages = sum(c.throttled), sum(c.failed), c.shortPages
	return out
}

func (b *openaiBook) set(fn func(*openaiBook)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	fn(b)
}
