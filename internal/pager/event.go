package pager

import (
	"errors"
	"fmt"
	"time"
)

// Event actions of the Events API v2.
const (
	ActionTrigger     = "trigger"
	ActionAcknowledge = "acknowledge"
	ActionResolve     = "resolve"
)

// Severities of a triggered event.
const (
	SeverityCritical = "critical"
	SeverityError    = "error"
	SeverityWarning  = "warning"
	SeverityInfo     = "info"
)

// MaxDedupKeyLen is the longest dedup_key the Events API v2 accepts.
const MaxDedupKeyLen = 255

// Event is one PagerDuty Events API v2 event, in its wire format.
type Event struct {
	// RoutingKey is the integration key of the service to page. It is a
	// credential and is never logged.
	RoutingKey  string `json:"routing_key"`
	EventAction string `json:"event_action"`
	// DedupKey makes repeats of one incident collapse into one alert; it is
	// also the outbox key.
	DedupKey string   `json:"dedup_key"`
	Payload  *Payload `json:"payload,omitempty"`
}

// Payload describes the incident of a triggered event.
type Payload struct {
	Summary       string         `json:"summary"`
	Source        string         `json:"source"`
	Severity      string         `json:"severity"`
	Timestamp     time.Time      `json:"timestamp,omitzero"`
	Component     string         `json:"component,omitempty"`
	Group         string         `json:"group,omitempty"`
	Class         string         `json:"class,omitempty"`
	CustomDetails map[string]any `json:"custom_details,omitempty"`
}

// Validate reports every rule of the Events API v2 that e breaks, and a
// missing dedup key, which the outbox needs.
func (e Event) Validate() error {
	var errs []error
	if e.RoutingKey == "" {
		errs = append(errs, errors.New("routing_key is empty"))
	}
	if e.DedupKey == "" {
		errs = append(errs, errors.New("dedup_key is empty"))
	}
	if len(e.DedupKey) > MaxDedupKeyLen {
		errs = append(errs, fmt.Errorf("dedup_key is longer than %d", MaxDedupKeyLen))
	}
	switch e.EventAction {
	case ActionTrigger:
		if e.Payload == nil {
			errs = append(errs, errors.New("payload is required to trigger"))
			break
		}
		if e.Payload.Summary == "" {
			errs = append(errs, errors.New("payload.summary is empty"))
		}
		if e.Payload.Source == "" {
			errs = append(errs, errors.New("payload.source is empty"))
		}
		switch e.Payload.Severity {
		case SeverityCritical, SeverityError, SeverityWarning, SeverityInfo:
		default:
			errs = append(errs, fmt.Errorf("payload.severity %q is not one of critical, error, warning, info", e.Payload.Severity))
		}
	case ActionAcknowledge, ActionResolve:
	default:
		errs = append(errs, fmt.Errorf("event_action %q is not one of trigger, acknowledge, resolve", e.EventAction))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidEvent, errors.Join(errs...))
	}
	return nil
}
