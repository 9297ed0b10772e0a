// Package ceoracle checks hookline's CloudEvents reader (package usagein)
// against the CloudEvents Go SDK, an artefact of the spec. It is a module
// of its own so that the SDK's dependency tree stays out of hookline's
// go.mod; `make test` runs it.
package ceoracle
