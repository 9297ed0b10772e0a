package price

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hookline/hookline/internal/sums"
)

// ErrCountedTwice is a configuration that would count the same spend
// twice: OpenAI's costs and its token meters for the same projects.
var ErrCountedTwice = errors.New("price: the same spend would be counted twice")

// CheckCostsOrTokens refuses, at start, OpenAI sums sources that read both
// the costs endpoint and a usage endpoint (tokens, requests, images, ...)
// of the same organisation, mode and project alias prefix. A workload's
// OpenAI project is its alias with that prefix, so such a workload would
// be counted by both: its costs are already the money its tokens cost,
// and pricing the tokens would count the same spend again. A workload
// caps OpenAI by costs (a money meter, price 1) or by its usage meters
// priced per unit, never both. It holds with or without prices.
func CheckCostsOrTokens(ss sums.Sources) error {
	type scope struct{ account, mode, prefix string }
	type reads struct{ costs, usage []string }
	by := map[scope]*reads{}
	for _, name := range slices.Sorted(maps.Keys(ss)) {
		s := ss[name]
		if sums.Providers[s.Provider].Endpoints == nil {
			continue
		}
		k := scope{s.Account, "test", s.AliasPrefix}
		if s.Livemode {
			k.mode = "live"
		}
		if by[k] == nil {
			by[k] = &reads{}
		}
		for _, mname := range slices.Sorted(maps.Keys(s.Meters)) {
			where := fmt.Sprintf("%s (meter %q, endpoint %s)", name, mname, s.Meters[mname].Endpoint)
			if s.Meters[mname].Endpoint == sums.OpenAICosts {
				by[k].costs = append(by[k].costs, where)
			} else {
				by[k].usage = append(by[k].usage, where)
			}
		}
	}
	var errs []error
	for _, k := range slices.SortedFunc(maps.Keys(by), func(a, b scope) int {
		return strings.Compare(a.account+"\x00"+a.mode+"\x00"+a.prefix, b.account+"\x00"+b.mode+"\x00"+b.prefix)
	}) {
		if r := by[k]; len(r.costs) > 0 && len(r.usage) > 0 {
			errs = append(errs, fmt.Errorf("%w: account %s (%s, projects %s...): costs are read by %s and usage by %s: a workload would count its spend in both; cap by costs or by priced usage, not both",
				ErrCountedTwice, k.account, k.mode, k.prefix, strings.Join(r.costs, ", "), strings.Join(r.usage, ", ")))
		}
	}
	return errors.Join(errs...)
}
