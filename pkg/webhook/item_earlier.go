package webhook

// WithEarlierPayload returns it with the payload builds before stored the
// same event under its own EventID, when a later build queues the event
// in another form: the intake then takes a record of that payload under
// the same ID as this event, a duplicate rather than a conflict
// ([Item.LegacyPayload]).
func (it Item) WithEarlierPayload(payload []byte) Item {
	it.LegacyEventID = it.EventID
	it.legacy = legacyEnvelope{raw: payload}
	return it
}
