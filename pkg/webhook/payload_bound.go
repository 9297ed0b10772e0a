package webhook

import "sort"

// What one item's queue message can take, from the size of the body it
// came in, so that a receiver can bound each source's body limit by
// what its queue holds and refuse no body within that limit for its
// size.

// maxTypeLen bounds an item's type, which its message copies beside the
// item: a provider's event types are short names.
const maxTypeLen = 255

// envelopeOverhead bounds what an [ItemEnvelope] holds beside its item:
// the members' names, the provider, the identity and the header's ID
// (printable ASCII, a byte escaped in at most two) and the type (a byte
// escaped in at most six, as \u00XX).
var envelopeOverhead = int64(len(`{"provider":"","id":,"type":,"header_id":,"item":,"fetch":true}`)+longestPresetName()) +
	2*(2+2*maxEventIDLen) + 2 + 6*maxTypeLen

// mollieItemLen bounds Mollie's item, {"id":"tr_..."}, built from the ID
// in its form.
const mollieItemLen = len(`{"id":""}`) + maxEventIDLen

func longestPresetName() int {
	n := 0
	for s := range presets {
		n = max(n, len(s))
	}
	return n
}

// MaxPayload returns the most bytes an item's [Item.Payload] can take for
// a body of n bytes under the scheme: the body itself for the two generic
// schemes; for a preset, its envelope around an item that is at most the
// body (the body, or a part of it), or Braintree's XML as a JSON string
// (the XML travels as base64 in the body, so it is at most 3/4 of it,
// and each of its bytes takes at most two: [braintreeItem]), or Mollie's
// {"id":...}.
func (s Scheme) MaxPayload(n int64) int64 {
	_, preset := presets[s]
	switch {
	case !preset:
		return n
	case s == SchemeBraintree:
		return envelopeOverhead + 2 + 2*(3*n/4)
	case s == SchemeMollie:
		return envelopeOverhead + int64(mollieItemLen)
	}
	return envelopeOverhead + n
}

// MaxBodyFor returns the largest body limit, at most [MaxBodyLimit],
// under which no item's payload takes more than limit bytes
// ([Scheme.MaxPayload]); 0 when even an empty body's could.
func (s Scheme) MaxBodyFor(limit int64) int64 {
	if s.MaxPayload(0) > limit {
		return 0
	}
	// The largest n in [0, MaxBodyLimit] with MaxPayload(n) <= limit:
	// MaxPayload grows with n.
	return int64(sort.Search(int(MaxBodyLimit), func(n int) bool { return s.MaxPayload(int64(n)+1) > limit }))
}
