package sim

import (
	"encoding/binary"
	"fmt"
	"hash"
	"hash/fnv"
)

// roundWorld is what the primitives' rounds (semaphores, lock sets,
// read/write locks) share of a round: its seeds, its simulated time and
// event queue, its digest, and where its violations go with the command
// that replays them. Each round's world embeds one.
type roundWorld struct {
	runSeed uint64 // the run's --seed
	seed    uint64 // the round's own, derived from (runSeed, round)
	round   int
	rng     rng
	now     int64
	q       eventQueue
	seq     uint64
	digest  hash.Hash64
	neg     *Negative
	flag    string       // the fencegate sim flag that runs these rounds, for the replay command
	viol    *[]Violation // the round's counts' violations
}

func newRoundWorld(runSeed, seed uint64, round int, neg *Negative, flag string, viol *[]Violation) roundWorld {
	return roundWorld{runSeed: runSeed, seed: seed, round: round, rng: newRNG(seed), digest: fnv.New64a(), neg: neg, flag: flag, viol: viol}
}

func (w *roundWorld) nowMs() int64 { return w.now }

// regNowMs is the round's instant on the registry's clock.
func (w *roundWorld) regNowMs() int64 { return epochBase.UnixMilli() + w.now }

// at runs fn at t ms of the round, after everything queued for t before.
func (w *roundWorld) at(t int64, fn func()) {
	w.seq++
	w.q.push(event{atMs: t, seq: w.seq, fn: fn})
}

// mix folds vs into the round's digest.
func (w *roundWorld) mix(vs ...uint64) {
	var b [8]byte
	for _, v := range vs {
		binary.LittleEndian.PutUint64(b[:], v)
		w.digest.Write(b[:])
	}
}

// repro is the command that replays the round (the last of those it
// runs; each round is seeded from (seed, round) alone).
func (w *roundWorld) repro() string {
	cmd := "fencegate sim"
	if w.neg != nil && w.neg.Name != "" {
		cmd = "go run ./sim/cmd/simbreak --break " + w.neg.Name
	}
	return fmt.Sprintf("%s --rounds 1 --faults none --seed %d %s %d --parallel 1", cmd, w.runSeed, w.flag, w.round)
}

// violate records a violation of kind (up to ViolationsMax a round).
func (w *roundWorld) violate(kind, format string, args ...any) {
	if len(*w.viol) < ViolationsMax {
		*w.viol = append(*w.viol, Violation{Round: w.round, Kind: kind, Detail: fmt.Sprintf(format, args...),
			Seed: w.runSeed, RoundS: w.seed, Repro: w.repro()})
	}
}

// once counts a violation of kind for one intent (counted is its set of
// kinds counted so far) the first time only.
func (w *roundWorld) once(counted *map[string]bool, kind string, count *int, format string, args ...any) {
	if (*counted)[kind] {
		return
	}
	if *counted == nil {
		*counted = map[string]bool{}
	}
	(*counted)[kind] = true
	*count++
	w.violate(kind, format, args...)
}
