package usagein

import (
	"time"

	"github.com/hookline/hookline/pkg/provider"
)

// ReadStoredEvent reads one CloudEvent that a usage export serves (an
// OpenMeter event, stored as the producer sent it) under m, as the door
// reads it when it arrives on the hookline source named source: the same
// identity ([CloudEventKey]), workload, meter, value and time rule, with
// seen, when the export first held it, in place of the door's clock. An
// event the door would refuse comes back with Err set, a
// [*provider.FieldError]; its EventID is "" when the event has no usable
// source and id.
func (m Mapping) ReadStoredEvent(event []byte, source string, seen time.Time) Item {
	doc, err := provider.ReadJSON(event)
	if err != nil {
		return Item{Err: err}
	}
	return m.readEvent(doc, Request{Source: source, Seen: seen})
}
