package providersim

import (
	"time"

	"github.com/hookline/hookline/pkg/provider"
)

// Forget drops the charges committed before t, and with each what the
// simulator keeps for it: its key's lookup and saved answer, its count in
// ChargeCount, SucceededCount and the duplicates, and the fault counter of
// its key. Afterwards the simulator answers as if they had never been
// made: a lookup of their keys finds nothing, a request with one of their
// keys executes again, and the counts cover the charges kept. New charges
// keep numbering on. It returns how many charges it dropped.
//
// A simulator that runs for hours (the live lab, at hundreds of charges a
// second) calls it now and then with a time well past any lookup it may
// still answer, so that its memory stays bounded.
func (v *Charges) Forget(t time.Time) int {
	s := v.core
	b := &s.charges
	b.mu.Lock()
	n := 0
	for n < len(b.all) && b.all[n].at.Before(t) {
		n++
	}
	if n == 0 {
		b.mu.Unlock()
		return 0
	}
	var keys []string
	for i, e := range b.all[:n] {
		ch := e.charge
		if k := ch.IdempotencyKey; k != "" {
			keys = append(keys, k)
			if b.byKey[k] == i {
				delete(b.byKey, k)
				delete(b.saved, k)
			}
		}
		less(b.byEvent, ch.EventID)
		if ch.Status == provider.StatusSucceeded {
			less(b.succeeded, ch.EventID)
		}
	}
	for k, i := range b.byKey {
		b.byKey[k] = i - n
	}
	for k, is := range b.byMeta {
		kept := is[:0]
		for _, i := range is {
			if i >= n {
				kept = append(kept, i-n)
			}
		}
		if len(kept) == 0 {
			delete(b.byMeta, k)
		} else {
			b.byMeta[k] = kept
		}
	}
	b.all = append([]entry(nil), b.all[n:]...) // a new array: the old one's front is garbage
	b.forgotten += n
	b.mu.Unlock()

	p := &s.faults
	p.mu.Lock()
	for _, k := range keys {
		delete(p.seen, k)
	}
	p.mu.Unlock()
	return n
}

// less counts one fewer under k, forgetting k at zero.
func less(m map[string]int, k string) {
	if m[k]--; m[k] <= 0 {
		delete(m, k)
	}
}
