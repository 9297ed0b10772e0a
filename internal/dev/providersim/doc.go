// Package providersim is a real HTTP server that simulates the payment and
// usage provider and the pager, for tests, local runs and benchmarks. It
// speaks the wire formats that package [provider] expects and lets a test
// inject the failures that make exactly-once effects hard.
//
// Start one on a free loopback port with [Sim.Start] and point a
// [provider.Client] at [Sim.URL], as the package example does. Or mount
// [Sim.Handler] in a server of your own, or run [Sim.ListenAndServe] from a
// main.
//
// # Charges
//
// POST /v1/charges creates a charge and GET /v1/charges?idempotency_key=k
// looks one up. [Config.Profile] says how keys are treated, one of the three
// idempotency profiles of the provider contract (docs/provider-contract.md):
//
//   - [ProfileHonoursKeys] saves the first result for a key, errors
//     included, and replays it (Stripe API v1);
//   - [ProfileReplaysSuccesses] saves successful charges only, so a retry
//     after a decline or an error executes again (Checkout.com style);
//   - [ProfileIgnoresKeys] executes every request, as a careless provider
//     would.
//
// Under the two keyed profiles a request whose key is still in flight gets
// 409 idempotency_key_in_use. Lookup by key works under every profile,
// returns the first charge made with that key, and finds it only
// [Config.LookupLag] after it was committed. A test proves that the caller
// prevents duplicates by reading [Charges.DuplicateCharges] and
// [Charges.SucceededCount].
//
// The customer [DeclineCustomer] and any amount ending in 02 are declined
// with a 402 (with the charge as its body, or a Stripe-style error object
// with [Config.DeclineErrorBody]). [Config.NormaliseCurrency] lower-cases
// the currency of every charge. [Faults.InjectFaults], [Faults.SetFaultRate] and
// [Faults.SetFaultFunc] program failures of the kinds listed under
// [FaultKind]: some never execute the charge, others execute it and then
// answer 5xx, drop the connection, answer too late, commit after the client
// gave up, or answer 409 while a first request is still in flight. A fault
// never fires on a lookup.
//
// # Stripe's face
//
// The same charges, key rules and faults are also served as the part of
// Stripe's API that a PaymentIntent charge uses, for the Stripe adapter
// (package stripecharge): POST /v1/payment_intents (form-encoded; it must
// be confirmed, off-session, on the customer's default payment method,
// [DefaultPaymentMethod]), GET /v1/payment_intents/search with one
// metadata['name']:'value' clause (lagging commits by [Config.LookupLag],
// as Stripe's search index does, and reading only \' as an escape, as
// Stripe documents), and GET /v1/customers/{id}. Both APIs refuse an
// Idempotency-Key over [MaxIdempotencyKeyLen] (255) characters, and the
// Stripe face metadata over Stripe's limits ([MaxMetadataKeyLen],
// [MaxMetadataValueLen]), as Stripe does. Answers are
// PaymentIntents; a decline is a 402 card_error carrying its intent; the
// metadata event_id names the event a charge counts for. Stripe's profile
// is [ProfileHonoursKeys] with [Config.NormaliseCurrency]. The customer
// [RequiresActionCustomer] gets intents in requires_action until
// [Charges.Authenticate]; [NoPaymentMethodCustomer] has no default payment
// method. `hookline run --provider stripe` charges through this face.
//
// # Usage
//
// [UsageFeed.AddUsage] adds a usage record. GET /v1/usage exports records whose
// published_at lies in [since, until) and is not in the future of the
// simulator's clock, ordered by (published_at, record_id) and paged with an
// opaque keyset token. [UsageFeed.FailExport] makes export pages fail.
// [UsageFeed.EmitUsage] sends each record's webhook through a [Sender], or drops
// it, or sends different units, as [UsageOptions] say.
//
// # Usage faces and their faults
//
// Stripe's billing meters ([BillingMeter]), OpenAI's organization usage
// ([OpenAIUsage]) and OpenMeter ([OpenMeter]) each serve their provider's
// wire format over one fault vocabulary, the same code on every face:
// lag before usage shows (a revision shows at once), gaps ([Gap]), pages
// that end early, float noise, a rate limit, and programmed 429s with
// Retry-After and 5xx ([CallFault]). Each face applies the kinds its
// provider shows and writes them as that provider does.
//
// A driver outside the process scripts the faces over HTTP under their
// sim paths ([MeterSimPath] /sim/meters, [OpenAISimPath] /sim/openai,
// [OpenMeterSimPath] /sim/openmeter). Bodies are JSON, times RFC 3339 and
// durations Go durations ("90s"); a refused request gets 400 {"error":
// "..."}, one that changes a setting 204. The fault vocabulary's routes,
// under each path:
//
//	POST   lag        {"lag"} (Stripe's also {"meter", "lag"}: a meter's own; OpenMeter's: the store lag of events ingested from now on)
//	POST   fail       {"endpoint", "next", "status", "retry_after"}: the next calls answer 429 (default) or a 5xx (with a wait only when retry_after is given)
//	GET    waits      every wait a 429 or 5xx named and when the endpoint's next call came ([RetryAfterServed])
//	POST   ratelimit  {"endpoint", "per_second"}: 429 beyond that many calls a second of the clock
//	DELETE gaps       closes every gap (POST gaps opens one: a MeterGap or an OpenAIGap)
//	POST   pagesize   {"buckets"}: pages end early after that many (not OpenMeter's)
//	POST   noise      {"on"}: float noise in values, OpenAI's in costs (not OpenMeter's)
//
// Each face records, by wall time, every answer that named a wait and
// the endpoint's next call ([Sim.MeterRetryAfters], [Sim.OpenAIRetryAfters],
// [OpenMeter.RetryAfters]), so that a test proves no client called again
// before a Retry-After ran out.
//
// An endpoint is a [MeterEndpoint] on Stripe's face, "events" or
// "meter_query" on OpenMeter's, and empty (all) on any. The faces' own
// routes:
//
//	POST /sim/meters               a BillingMeter → the meter with its ID
//	GET  /sim/meters               {"meters", "livemode", "calls"}
//	POST /sim/meters/events        a MeterEvent → the event as recorded
//	POST /sim/meters/cancel        {"event_name", "identifier"}
//	GET  /sim/meters/{id}/sum      ?customer&start&end → {"value": "12.5", ...}
//	POST /sim/meters/revise        {"meter", "customer", "at", "by"}
//	POST /sim/meters/livemode      {"on"}
//	GET  /sim/meters/calls         MeterCallCounts
//	POST /sim/meters/alerts        {"meter", "customer", "gte"} → {"id"}
//	GET  /sim/meters/alerts        every alert event made, as Stripe posts them
//	POST /sim/meters/alerts/send   posts the pending ones ([Sim.SetMeterAlertWebhooks])
//	POST /sim/openai/usage         an OpenAIUsage
//	POST /sim/openai/costs         an OpenAICost
//	POST /sim/openai/revise        {"endpoint", "project", "at", "field", "by"}: by < 0 revises down
//	POST /sim/openai/costs/revise  {"project", "at", "by"}: a signed decimal
//	GET  /sim/openai/calls         OpenAICallCounts
//	POST /sim/openmeter/events     {"event": a UsageCloudEvent, "lag": "5m"} → the event as ingested
//	POST /sim/openmeter/between    [UsageCloudEvent...]: stored when a listing asks for its next page
//	POST /sim/openmeter/store      stores now the events ingested late → {"stored": n}
//	POST /sim/openmeter/meters     an OpenMeterMeter
//	GET  /sim/openmeter/calls      calls per endpoint, and the refusals
//
// # Pager
//
// POST /v2/enqueue accepts PagerDuty Events API v2 events, validates them
// (400 when invalid), records them for [PagerSink.Pages] and calls
// [Config.OnPage]. [PagerSink.SetPagerDown] makes it answer 503.
//
// # Providers' read APIs
//
// Where a webhook does not vouch for what it names, the payment worker
// reads the object from its provider's API first, and these doubles
// serve it: [MollieAPI] (GET /v2/payments/{id}, with a read lag),
// [PayPalAPI] (an OAuth2 client-credentials token endpoint, GET
// /v2/payments/captures/{id} and /v1/payments/sale/{id}) and
// [GoCardlessAPI] (GET /payments/{id} with GoCardless-Version). Each
// takes its objects from a test, or over HTTP by PUT on its sim path for
// `hookline dev send-webhook`, and answers 404 for an object it does not
// hold and 503 on demand (FailNext).
//
// # Webhooks
//
// A [Sender] posts signed webhooks and retries like a real provider. It does
// not sign by itself: the caller passes a [Signer].
package providersim
