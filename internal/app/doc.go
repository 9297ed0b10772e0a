// Package app builds each function's handler from its configuration and
// AWS clients. The Lambda mains in functions/ and the local runner use the
// same constructors, so what runs locally is what is deployed.
package app
