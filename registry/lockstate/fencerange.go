package lockstate

import (
	"fmt"

	"github.com/fencegate/fencegate/wire"
)

// Fence ranges. A fence is one unsigned 64-bit integer, and gates compare
// nothing else; the registry reads it as a generation in the high 32 bits
// and a per-resource counter in the low 32:
//
//	fence = generation<<32 | counter
//
// The generation is registry-wide (Settings.FenceGeneration, raise only).
// A resource's next fence is max(HighestFence, Floor, generation<<32) + 1:
// the floor and the range compose by max, and a resource's fences stay
// strictly increasing in one store whatever the generation does. Its
// counter never crosses into the next generation's range: a grant that
// would is refused (ErrFenceRange) until a bump. So every fence issued
// while the generation was g is below (g+1)<<32, and a bump to any
// generation above g puts every later fence above all of them, in every
// resource at once, with nothing to do at the gates.
//
// Generation 0 is every store before its first bump: fences 1, 2, 3, … as
// they always were (a counter of at most 2^32 − 1 per resource).

// FenceCounterBits is how many low bits of a fence count a resource's
// grants within one generation.
const FenceCounterBits = 32

// FenceCounterMax is the most grants a resource may take in one
// generation, 2^32 − 1 (a counter of 0 is never issued).
const FenceCounterMax = 1<<FenceCounterBits - 1

// FenceGenerationMax is the highest generation, 2^32 − 1. A generation
// taken from the clock (Unix seconds) reaches it in February 2106.
const FenceGenerationMax = 1<<(64-FenceCounterBits) - 1

// FenceGenerationOf is the generation whose range holds fence.
func FenceGenerationOf(fence uint64) uint64 { return fence >> FenceCounterBits }

// FenceRangeOf returns the first and last fence of generation gen's range.
func FenceRangeOf(gen uint64) (first, last uint64) {
	return gen<<FenceCounterBits | 1, gen<<FenceCounterBits | FenceCounterMax
}

// nextFence is the fence rec's next grant gets under set: above the
// highest issued, the floor and the start of the range, and inside the
// range. A resource that reached the range's end (or whose floor lies
// beyond it) gets ErrFenceRange until a bump.
func nextFence(resource string, rec *Record, set Settings) (uint64, error) {
	first, last := FenceRangeOf(set.FenceGeneration)
	base := max(rec.HighestFence, rec.Floor, first-1)
	if base >= last {
		return 0, fmt.Errorf("%w: %s: fence %d is at or past the end of generation %d's range (%d): bump the range (fencegate fence-range bump --above %d)",
			wire.ErrFenceRange, resource, base, set.FenceGeneration, last, base)
	}
	return base + 1, nil
}

// endsWithBump reports whether a grant of fence is from a generation
// before set's: a bump ended its lease.
func endsWithBump(fence uint64, set Settings) bool {
	return FenceGenerationOf(fence) < set.FenceGeneration
}

// BumpInput is what decides a bump's generation.
type BumpInput struct {
	// NowMs is the clock of whoever bumps, Unix milliseconds.
	NowMs int64
	// Above, when not 0, is a fence the new range must be above (the
	// highest fence any gate reports, or the last fence of another
	// store's range): for when clocks cannot be trusted to order bumps.
	Above uint64
	// Seen is the highest generation the bumping registry has read from
	// the store (0 when bumping the store directly).
	Seen uint64
}

// DecideBump returns the settings after a bump: the generation is the
// highest of the current one + 1, the clock's Unix seconds, the
// generation above Above's, and the one above Seen. The clock term is
// what lets a bump know nothing of other stores: a bump taken later by
// the clock is in a higher generation, as long as clocks do not go back
// across bumps by more than the skew bound (Registry.BumpFenceRange waits
// out the rest of its second for that). It never lowers the generation.
func DecideBump(set Settings, in BumpInput) (Settings, error) {
	gen := set.FenceGeneration
	if gen == FenceGenerationMax {
		return set, fmt.Errorf("%w: the fence generation is at its maximum %d", wire.ErrFenceRange, gen)
	}
	gen++
	if in.NowMs > 0 {
		gen = max(gen, uint64(in.NowMs/1000))
	}
	if in.Above != 0 {
		gen = max(gen, FenceGenerationOf(in.Above)+1)
	}
	if in.Seen >= FenceGenerationMax {
		return set, fmt.Errorf("%w: this registry has seen the maximum fence generation %d", wire.ErrFenceRange, in.Seen)
	}
	gen = max(gen, in.Seen+1)
	if gen > FenceGenerationMax {
		return set, fmt.Errorf("%w: a bump above fence %d needs generation %d, beyond the maximum %d", wire.ErrFenceRange, in.Above, gen, FenceGenerationMax)
	}
	next := set
	next.FenceGeneration = gen
	next.FenceBumpedAtMs = in.NowMs
	return next, nil
}

// checkFloorInRange refuses a floor that no fence of the current range
// can exceed: it asks for a bump, which moves every resource at once.
func checkFloorInRange(resource string, fence uint64, set Settings) error {
	if _, last := FenceRangeOf(set.FenceGeneration); fence >= last {
		return fmt.Errorf("%w: %s: floor %d is beyond generation %d's range (ends at %d): bump the range instead (fencegate fence-range bump --above %d)",
			wire.ErrFenceRange, resource, fence, set.FenceGeneration, last, fence)
	}
	return nil
}
