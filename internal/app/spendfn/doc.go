// Package spendfn wires the spend worker ([spendworker.Worker]) from its
// environment: its [Function] is what functions/spend-worker starts.
package spendfn
