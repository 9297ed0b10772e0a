package sums

import (
	"maps"
	"slices"
	"time"
)

// Ascending is one [Sum] of width per bucket start in values, in
// ascending order: how a reader that keeps a bucket's latest value by its
// start hands its read on.
func Ascending(values map[time.Time]float64, width time.Duration) []Sum {
	out := make([]Sum, 0, len(values))
	for _, start := range slices.SortedFunc(maps.Keys(values), time.Time.Compare) {
		out = append(out, Sum{Start: start, End: start.Add(width), Value: values[start]})
	}
	return out
}
