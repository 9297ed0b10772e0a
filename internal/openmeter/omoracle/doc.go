// Package omoracle checks hookline's OpenMeter adapter (package openmeter)
// and the simulator's OpenMeter face against OpenMeter's published OpenAPI
// spec: every request the adapter sends and every answer the face gives is
// validated against the operation it calls, and the threshold
// notifications hookline reads against their payload's schema.
//
// OpenMeter's generated Go client lives inside its whole server module,
// which the Go module proxy here does not serve; the check reads instead
// a fragment of api/openapi.yaml (testdata/openapi.yaml, its source and
// commit named in its header), with kin-openapi as the validator. It is a
// module of its own so that kin-openapi stays out of hookline's go.mod;
// `make test` runs it.
package omoracle
