// Package receiverfn wires the webhook receiver ([receiver.Handler]) from
// its environment: its [Function] is what functions/receiver starts.
package receiverfn
