package providersim

import (
	"encoding/json"
	"time"
)

// OpenMeterThreshold is an entitlements.balance.threshold notification as
// OpenMeter sends it through Svix: the subject's usage of the feature's
// meter in the entitlement's current usage period reached Usage.
type OpenMeterThreshold struct {
	// ID is the notification event's ID (a ULID).
	ID string
	// Subject is the subject's key; MeterSlug the feature's meter.
	Subject, MeterSlug string
	// Usage is value.usage, a JSON number's text ("150.5").
	Usage string
	// PeriodFrom and PeriodTo are the entitlement's currentUsagePeriod.
	PeriodFrom, PeriodTo time.Time
	// At is the notification's timestamp.
	At time.Time
}

// IDs of the face's one entitlement, feature and subject (ULIDs).
const (
	omEntitlementID = "01J0ENT0000000000000000000"
	omFeatureID     = "01J0FEA0000000000000000000"
	omSubjectID     = "01J0SBJ0000000000000000000"
)

// Body is the notification's JSON, with the members OpenMeter's schema
// requires (NotificationEventBalanceThresholdPayload).
func (n OpenMeterThreshold) Body() ([]byte, error) {
	stamp := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	created := stamp(n.PeriodFrom.Add(-24 * time.Hour))
	return json.Marshal(map[string]any{"id": n.ID, "type": "entitlements.balance.threshold", "timestamp": stamp(n.At),
		"data": map[string]any{
			"entitlement": map[string]any{"type": "metered", "id": omEntitlementID, "createdAt": created,
				"updatedAt": created, "activeFrom": created, "subjectKey": n.Subject, "featureKey": n.MeterSlug,
				"featureId": omFeatureID, "lastReset": stamp(n.PeriodFrom), "measureUsageFrom": created,
				"currentUsagePeriod": map[string]string{"from": stamp(n.PeriodFrom), "to": stamp(n.PeriodTo)},
				"usagePeriod":        map[string]any{"interval": "DAY", "intervalISO": "P1D", "anchor": created}},
			"feature": map[string]any{"id": omFeatureID, "key": n.MeterSlug, "name": n.MeterSlug,
				"meterSlug": n.MeterSlug, "createdAt": created, "updatedAt": created},
			"subject":   map[string]any{"id": omSubjectID, "key": n.Subject, "createdAt": created, "updatedAt": created},
			"value":     map[string]any{"hasAccess": true, "usage": json.RawMessage(n.Usage), "balance": 0},
			"threshold": map[string]any{"value": 100, "type": "usage_value"}}})
}
