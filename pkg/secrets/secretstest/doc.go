// Package secretstest is the conformance suite every [secrets.Provider]
// passes: the environment provider and the Secrets Manager provider run
// the same cases, so the receiver can rely on one behaviour.
package secretstest
