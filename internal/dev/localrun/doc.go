// Package localrun wires the whole system together on the embedded local
// AWS for `make run` and for end-to-end tests: local AWS with every template
// resource, the provider simulator, and every function behind the local
// Lambda adapters that the template declares for it.
package localrun
