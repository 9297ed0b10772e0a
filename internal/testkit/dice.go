package testkit

import (
	"encoding/binary"
	"hash/fnv"
	"sync"
)

// Dice draws seeded decisions from the names of what is decided (an
// event, a step, how many times that step was taken), never from the order
// in which concurrent work reaches it: the same seed makes the same
// decisions for the same names. It is safe for concurrent use.
type Dice struct {
	seed   uint64
	mu     sync.Mutex
	counts map[string]int
}

// NewDice returns dice for seed.
func NewDice(seed uint64) *Dice { return &Dice{seed: seed, counts: map[string]int{}} }

// Seed returns the dice's seed.
func (d *Dice) Seed() uint64 { return d.seed }

// Roll returns a number in [0, 1) for the parts.
func (d *Dice) Roll(parts ...string) float64 {
	return float64(d.Hash(parts...)>>11) / (1 << 53)
}

// Hash returns a 64-bit number for the parts.
func (d *Dice) Hash(parts ...string) uint64 {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], d.seed)
	h.Write(b[:])
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	// fnv alone mixes its last bytes poorly: finish with splitmix64.
	z := h.Sum64() + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Next counts the occurrences of name and returns this one's number,
// from 1.
func (d *Dice) Next(name string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.counts[name]++
	return d.counts[name]
}
