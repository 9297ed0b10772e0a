// Package admissionfn wires the admission endpoint ([admission.Handler])
// from its environment: its [Function] is what functions/admission starts.
// It reads the workloads table and builds no other AWS client.
package admissionfn
