package sim

import (
	"encoding/binary"
	"hash/fnv"
	"math/rand/v2"
)

// roundSeed derives round k's seed from the run seed, so round k can be
// replayed alone (--round k) and rounds can run on any number of cores
// without changing a single decision.
func roundSeed(seed uint64, round int) uint64 {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], seed)
	binary.LittleEndian.PutUint64(b[8:], uint64(round))
	h := fnv.New64a()
	h.Write(b[:])
	return h.Sum64()
}

// rng is the round's only source of randomness.
type rng struct{ r *rand.Rand }

func newRNG(seed uint64) rng {
	return rng{rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// chance reports true with probability p.
func (g rng) chance(p float64) bool { return p > 0 && g.r.Float64() < p }

// between returns a uniform int64 in [lo, hi].
func (g rng) between(lo, hi int64) int64 {
	if hi <= lo {
		return lo
	}
	return lo + g.r.Int64N(hi-lo+1)
}

// pick returns a uniform index below n.
func (g rng) pick(n int) int { return g.r.IntN(n) }

// float returns a uniform float in [lo, hi).
func (g rng) float(lo, hi float64) float64 { return lo + g.r.Float64()*(hi-lo) }

// lateFaultStream is the second seed word of the draws of the faults
// from FaultLostRelease on (newWorld): "latefault".
const lateFaultStream = 0x6c617465666175
