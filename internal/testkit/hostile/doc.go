// Package hostile holds the hostile payment provider that the fault
// models share: the provider faults they draw from ([Faults]) and a
// seeded [providersim.FaultFunc] that spreads them over charge calls
// ([FaultFunc]). It belongs to the development harness (internal/dev):
// production code never imports it.
package hostile
