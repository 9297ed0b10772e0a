package providersim

import (
	"context"
	"net/http"
	"time"

	"github.com/hookline/hookline/internal/pager"
	"github.com/hookline/hookline/pkg/provider"
)

// Charges reads the book of charges the simulator made, on either API.
type Charges struct{ core *core }

// ChargeCount returns how many charges were made for eventID, declined ones
// included.
func (v *Charges) ChargeCount(eventID string) int { return v.core.ChargeCount(eventID) }

// SucceededCount returns how many successful charges were made for
// eventID: money taken from the customer.
func (v *Charges) SucceededCount(eventID string) int { return v.core.SucceededCount(eventID) }

// TotalCharges returns how many charges were made.
func (v *Charges) TotalCharges() int { return v.core.TotalCharges() }

// Duplicates returns the sum over events of (charges - 1), declined ones
// included: 0 when every event was charged at most once.
func (v *Charges) Duplicates() int { return v.core.Duplicates() }

// DuplicateCharges returns the sum over events of (successful charges - 1)
// for events charged more than once: customers charged twice.
func (v *Charges) DuplicateCharges() int { return v.core.DuplicateCharges() }

// All returns a copy of every charge made, in order.
func (v *Charges) All() []provider.Charge { return v.core.Charges() }

// Creates returns how many charge requests arrived, on either API,
// whatever became of them.
func (v *Charges) Creates() int { return v.core.Creates() }

// InFlight returns how many charge requests are being handled now.
func (v *Charges) InFlight() int { return v.core.InFlight() }

// WaitCommits waits until every commit that lands after its request ended
// (slow commits, in-flight keys) has landed.
func (v *Charges) WaitCommits() { v.core.WaitCommits() }

// Authenticate completes the charges made under key that wait for their
// customer ([RequiresActionCustomer]): they succeed. It reports whether
// one did.
func (v *Charges) Authenticate(key string) bool { return v.core.Authenticate(key) }

// Faults programs the failures of charge requests.
type Faults struct{ core *core }

// InjectFaults makes the next n charge requests fail with f, after any
// faults queued before.
func (v *Faults) InjectFaults(n int, f Fault) { v.core.InjectFaults(n, f) }

// SetFaultRate makes each charge request that has no queued fault fail with
// f with probability p, drawn from the seeded random source. p = 0 stops it.
func (v *Faults) SetFaultRate(p float64, f Fault) { v.core.SetFaultRate(p, f) }

// SetFaultFunc makes fn pick the fault of every charge request that has no
// queued fault; nil removes it. It takes precedence over a fault rate.
func (v *Faults) SetFaultFunc(fn FaultFunc) { v.core.SetFaultFunc(fn) }

// ClearFaults drops every queued fault, the fault rate and the fault
// function.
func (v *Faults) ClearFaults() { v.core.ClearFaults() }

// FaultsInjected returns how many faults of each kind fired.
func (v *Faults) FaultsInjected() map[FaultKind]int { return v.core.FaultsInjected() }

// UsageFeed is the provider's usage: records, their export and their webhooks.
type UsageFeed struct{ core *core }

// UsageEvent returns the webhook event for a record as it would be sent,
// with altered units applied, and whether the record exists.
func (v *UsageFeed) UsageEvent(recordID string) (provider.UsageEvent, bool) {
	return v.core.UsageEvent(recordID)
}

// EmitUsage sends the webhook of every record not emitted before, in
// (occurred_at, record_id) order, through snd, one at a time. Records whose
// mode is [WebhookDrop] are marked emitted without a request. A webhook that
// snd could not deliver still counts as emitted: a provider gives up too.
// EmitUsage stops early when ctx is done.
func (v *UsageFeed) EmitUsage(ctx context.Context, snd *Sender) (EmitReport, error) {
	return v.core.EmitUsage(ctx, snd)
}

// SetUsageWebhooks makes POST /sim/usage send each record's webhook through
// snd (nil: only record it).
func (v *UsageFeed) SetUsageWebhooks(snd *Sender) { v.core.SetUsageWebhooks(snd) }

// AddUsage adds a usage record. RecordID, WorkloadRef and OccurredAt are
// required and RecordID must be new.
func (v *UsageFeed) AddUsage(rec provider.UsageRecord, opts UsageOptions) error {
	return v.core.AddUsage(rec, opts)
}

// Records returns every record, visible or not, in export order.
func (v *UsageFeed) Records() []provider.UsageRecord { return v.core.Usage() }

// FailExport programs export failures, after any programmed before.
func (v *UsageFeed) FailExport(f ExportFault) { v.core.FailExport(f) }

// ExportRequests returns how many export requests arrived.
func (v *UsageFeed) ExportRequests() int { return v.core.ExportRequests() }

// PagerSink is the simulated PagerDuty Events API.
type PagerSink struct{ core *core }

// Pages returns a copy of every accepted pager event, in arrival order.
func (v *PagerSink) Pages() []pager.Event { return v.core.Pages() }

// PagerRequests returns how many requests reached the pager sink, refused
// ones included.
func (v *PagerSink) PagerRequests() int { return v.core.PagerRequests() }

// SetPagerDown makes the pager sink answer 503 to everything while down.
func (v *PagerSink) SetPagerDown(down bool) { v.core.SetPagerDown(down) }

// Handler returns the simulator's routes.
func (v *Sim) Handler() http.Handler { return v.core.Handler() }

// Start serves on a free port of 127.0.0.1 in the background. Stop it with
// [Sim.Close].
func (v *Sim) Start() error { return v.core.Start() }

// ListenAndServe serves on addr until ctx is done, then shuts down
// gracefully within five seconds.
func (v *Sim) ListenAndServe(ctx context.Context, addr string) error {
	return v.core.ListenAndServe(ctx, addr)
}

// URL returns the base URL once started, for example http://127.0.0.1:43123.
func (v *Sim) URL() string { return v.core.URL() }

// Close stops the server and ends every held request at once.
func (v *Sim) Close() error { return v.core.Close() }

// SetHonourIdempotencyKeys switches between [ProfileHonoursKeys] and
// [ProfileIgnoresKeys] at run time.
func (v *Sim) SetHonourIdempotencyKeys(on bool) { v.core.SetHonourIdempotencyKeys(on) }

// SetProfile sets how keys are treated from now on.
func (v *Sim) SetProfile(p Profile) { v.core.SetProfile(p) }

// Profile returns how keys are treated.
func (v *Sim) Profile() Profile { return v.core.Profile() }

// SetLookupLag sets how long after a commit the lookup starts to find it.
func (v *Sim) SetLookupLag(d time.Duration) { v.core.SetLookupLag(d) }

// SetNormaliseCurrency switches lower-casing of the currency in charges.
func (v *Sim) SetNormaliseCurrency(on bool) { v.core.SetNormaliseCurrency(on) }

// SetLatency sets the delay of every charge request from now on.
func (v *Sim) SetLatency(latency, jitter time.Duration) { v.core.SetLatency(latency, jitter) }
