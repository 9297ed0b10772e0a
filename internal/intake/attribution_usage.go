package intake

// Attribution states of usage events the ledger never sees.
const (
	// AttributionNotUsage: an event of a type the source's usage mapping
	// does not count; acknowledged and never counted.
	AttributionNotUsage Attribution = "not_usage"
	// AttributionZero: a reading of zero; acknowledged, recorded, with no
	// ledger effect.
	AttributionZero Attribution = "zero"
	// AttributionAlert: a provider's threshold alert, recorded beside the
	// ledger and compared with it; never counted.
	AttributionAlert Attribution = "alert"
)
