// Package registry lists every function of the template with its wiring
// ([app.Function], from internal/app/receiverfn and its siblings): the
// template tests and the local run, which starts every function in one
// process, build functions through it. A Lambda main never imports it, so
// that its bootstrap links its own function only.
package registry
