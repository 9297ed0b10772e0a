// Package openmeter reads OpenMeter, the usage provider that serves its
// events record by record, for the reconciler.
//
// [Client] is a [reconcile.Export] over OpenMeter's GET /api/v2/events.
// An event's ingestedAt plays the part of hookline's published_at: a run's
// window [since, until) is written as OpenMeter's filter language wants
// it, one operator per filter object, so the window is an $and of a $gte
// and a $lt on ingestedAt (a {"$gte", "$lt"} pair in one object is
// refused with 400). Answers come newest first, nextCursor appears only
// after a full page, and times are whole seconds; the client reads the
// window in steps, each to its last page, and hands the records on oldest
// first.
//
// OpenMeter may hold the events of several door sources, such as tokens
// at one scale and GPU hours at another ([Config.Source] and
// [Config.More]). Each event is read by the mapping of the source whose
// usage_types name its type, so each meter counts at its own scale under
// its own source; a type two sources claim is refused at [New]. A
// record's identity is its CloudEvent source and id, scoped by that
// hookline usage source and hashed exactly as the door does
// ([usagein.CloudEventKey], through [usagein.Mapping.ReadStoredEvent]),
// so that a record seen by webhook and by the poll is one ledger entry.
// Its workload reference is the event's subject (or the OpenMeter customer
// it belongs to), resolved through the workloads' aliases. It carries the
// usage source, meter and unit the mapping read, so that the ledger counts
// it in the same bucket of an OpenMeter sums source as its webhook.
//
// OpenMeter stores an event some time after it ingests it (storedAt −
// ingestedAt), and a window on ingestedAt that closed before a record was
// stored misses it. The client measures that lag on every record, reaches
// back by the largest lag seen (never less than [Config.Lag]), and
// alarms when it grows: a metric on every listing, a log line, and a page
// when it grows past [Config.Lag].
//
// [Reader] is a [sums.Reader] over GET /api/v1/meters/{slug}/query (hour
// windows, grouped by subject), the settle-time cross-check of the
// per-record sum, paged as any provider of sums.
//
// Both make their calls through a [paced.Client]: a 429, a 5xx or a lost
// call is retried up to [Config.Attempts] calls, waiting exactly the
// Retry-After OpenMeter names (seconds or an HTTP date, capped at
// [paced.MaxRetryAfter]) and otherwise a jittered backoff from 200ms, so
// no request is sent before a Retry-After runs out. The export's cursors
// are walked with a [paced.Walk] per step: a cursor seen before in the
// step, or more than [provider.MaxUsagePages] pages in a listing, fails
// it with [provider.ErrPageLoop]. [ParseAlert] reads an
// entitlements.balance.threshold notification, which the spend worker
// compares with the ledger over the entitlement's current usage period.
//
//	c, err := openmeter.New(openmeter.Config{BaseURL: url, APIKey: key,
//		Source: "meters", Mapping: mappings.For("meters")})
//	err = c.ListUsage(ctx, since, until, func(recs []provider.UsageRecord) error { ... })
package openmeter
