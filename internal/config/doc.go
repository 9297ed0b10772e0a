// Package config reads each function's configuration from its environment
// in one place. Every missing or bad variable is reported at once
// (errors.Join), so a misconfigured deploy fails on its first cold start
// with the whole list.
//
// The variable names are the ones infra/template.yaml sets; local runs set
// the same names from the template through [localaws.Env.FunctionEnv].
package config
