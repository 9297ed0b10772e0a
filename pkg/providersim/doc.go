// Package providersim is a real HTTP server that simulates the payment and
// usage provider and the pager, for tests, local runs and benchmarks. It
// speaks the wire formats that package [provider] expects and lets a test
// inject the failures that make exactly-once effects hard.
//
// Start one on a free loopback port:
//
//	sim, err := providersim.New(providersim.Config{HonourIdempotencyKeys: false})
//	if err != nil { ... }
//	if err := sim.Start(); err != nil { ... }
//	defer sim.Close()
//	client, err := provider.New(provider.Config{BaseURL: sim.URL()})
//
// Or mount [Sim.Handler] in a server of your own, or run
// [Sim.ListenAndServe] from a main.
//
// # Charges
//
// POST /v1/charges creates a charge and GET /v1/charges?idempotency_key=k
// looks one up. With [Config.HonourIdempotencyKeys] off the simulator
// ignores keys, as a careless provider would: every POST makes a new charge.
// A test can then prove that the caller's own registry prevents duplicates,
// reading [Sim.ChargeCount], [Sim.TotalCharges] and [Sim.Duplicates]. Lookup
// by key works either way and returns the first charge made with that key.
//
// The customer [DeclineCustomer] and any amount ending in 02 are declined
// with a 402. [Sim.InjectFaults] and [Sim.SetFaultRate] program failures of
// the kinds listed under [FaultKind]; a fault never fires on a lookup.
//
// # Usage
//
// [Sim.AddUsage] adds a usage record. GET /v1/usage exports records whose
// published_at lies in [since, until) and is not in the future of the
// simulator's clock, ordered by (published_at, record_id) and paged with an
// opaque keyset token. [Sim.FailExport] makes export pages fail.
// [Sim.EmitUsage] sends each record's webhook through a [Sender], or drops
// it, or sends different units, as [UsageOptions] say.
//
// # Pager
//
// POST /v2/enqueue accepts PagerDuty Events API v2 events, validates them
// (400 when invalid), records them for [Sim.Pages] and calls
// [Config.OnPage]. [Sim.SetPagerDown] makes it answer 503.
//
// # Webhooks
//
// A [Sender] posts signed webhooks and retries like a real provider. It does
// not sign by itself: the caller passes a [Signer].
package providersim
