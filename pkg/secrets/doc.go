// Package secrets supplies each webhook source's active signing secrets.
//
// In AWS, every source has one Secrets Manager secret. During rotation both
// its AWSCURRENT and AWSPREVIOUS versions are accepted, so a provider may
// sign with either while the change rolls out. Values are cached per
// execution environment for a short TTL and never logged.
//
// Locally, secrets come from environment variables (one per source,
// comma-separated for several active secrets); docs/local-run.md lists their names
// and development defaults.
//
// Both providers pass one conformance suite, package secretstest.
package secrets
