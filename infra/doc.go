// Package infra carries the deployment template, infra/template.yaml, as
// bytes in [Template]. Parse it with [github.com/hookline/hookline/internal/stack.Embedded].
package infra
