package chaos

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

// The porcupine model of a fenced counting semaphore (issue 46): NAME
// with N permits is N slots, each an ordinary fenced resource, so each
// slot is checked by the exclusive lock's model (stepRegistry, stepGate)
// and the semaphore adds what spans its slots:
//
//   - at most N holders: a permit is granted only on a slot below the N
//     the semaphore was first acquired with, and each slot has at most
//     one holder (the exclusive model's rule, lock-delay included);
//   - N is recorded: an acquire naming another N is never granted, and
//     PERMITS_MISMATCH answers only an acquire whose N differs;
//   - a permit is one slot: a lease never holds two slots at once;
//   - each slot's fences rise, and each slot's gate accepts as the
//     exclusive lock's does (highestFence per slot).
//
// Operations are what an HTTP client of the registry records: an
// acquire naming the semaphore and its N, answered with a grant on one
// slot (the slot's index read from the grant's resource, wire.SlotOf)
// or refused with a code; renew, release and status of the slot's
// resource; and the gates' decisions on a slot.

// semSlotsMax bounds the slots the model keeps per semaphore (the chaos
// runs use a few permits; the product allows wire.PermitsMax).
const semSlotsMax = 8

// semInput is one operation on a semaphore. The embedded opInput is the
// operation on the slot's resource (resource = wire.SlotResource(name,
// slot)); for an acquire (kind opGrant), outcome is "" when granted and
// the error's code (PERMITS_MISMATCH, BUSY, WAIT_TIMEOUT, …) when
// refused, and then slot, lease and fence are not set.
type semInput struct {
	opInput
	name    string // the semaphore
	permits uint64 // acquire: the N it named (0: not known, a grant found by its request ID)
	slot    int    // the slot's index
}

// semState is one semaphore's registry (slots' registry fields, permits)
// or one slot's gate (that slot's gate fields): the history is
// partitioned into both kinds (semPartition). It is comparable.
type semState struct {
	permits uint64 // N recorded with the semaphore (0: not known yet, or lost by a restore)
	slots   [semSlotsMax]modelState
}

// semPermitsMismatch is the code of an acquire naming another N.
const semPermitsMismatch = "PERMITS_MISMATCH"

// semModelFor is the semaphore model for a history: the run's
// lock-delay and its restores (as modelFor).
func semModelFor(ops []porcupine.Operation) porcupine.Model {
	restores := map[string]int{}
	most := 0
	for _, op := range ops {
		if in := op.Input.(semInput); in.kind == opRestore {
			restores[in.name]++
			most = max(most, restores[in.name])
		}
	}
	return newSemModel(modelParams{lockDelayMs: lockDelayMs, restores: most})
}

func newSemModel(p modelParams) porcupine.Model {
	nd := porcupine.NondeterministicModel{
		Partition: semPartition,
		Init: func() []interface{} {
			var s semState
			for i := range s.slots {
				s.slots[i] = modelState{known: true, restoresLeft: p.restores}
			}
			return []interface{}{s}
		},
		Step: func(state, input, _ interface{}) []interface{} {
			next := p.stepSemaphore(state.(semState), input.(semInput))
			out := make([]interface{}, len(next))
			for i := range next {
				out[i] = next[i]
			}
			return out
		},
		DescribeOperation: func(input, _ interface{}) string { return describeSemOp(input.(semInput)) },
		DescribeState: func(state interface{}) string {
			s := state.(semState)
			d := fmt.Sprintf("permits=%d", s.permits)
			for i, sl := range s.slots {
				if sl.holder != "" || sl.fenceMax != 0 || sl.highest != 0 {
					d += fmt.Sprintf(" slot%d{fenceMax=%d holder=%q exp=%d H=%d}", i, sl.fenceMax, sl.holder, sl.holderExp, sl.highest)
				}
			}
			return d
		},
	}
	return nd.ToModel()
}

// semPartition: one partition per semaphore for its registry operations
// (N and a lease's one slot span the slots), one per slot for its gate.
func semPartition(h []porcupine.Operation) [][]porcupine.Operation {
	idx := map[string]int{}
	var out [][]porcupine.Operation
	for _, op := range h {
		key := semObjectOf(op.Input.(semInput))
		i, ok := idx[key]
		if !ok {
			i = len(out)
			idx[key] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], op)
	}
	return out
}

// semObjectOf names the partition of a semaphore operation: the
// semaphore's registry, or one slot's gate.
func semObjectOf(in semInput) string {
	if in.kind == opDecide || in.kind == opResume {
		return fmt.Sprintf("%s slot %d gate", in.name, in.slot)
	}
	return in.name + " registry"
}

// stepSemaphore steps one semaphore (or one slot's gate) by one answered
// operation: every state it may be in afterwards, none if the answer is
// impossible.
func (p modelParams) stepSemaphore(s semState, in semInput) []semState {
	if in.kind == opRestore { // every slot goes back; N may be lost with the record
		out := []semState{s}
		for i := range s.slots {
			var next []semState
			for _, o := range out {
				for _, sl := range p.stepRegistry(o.slots[i], in.opInput) {
					o.slots[i] = sl
					next = append(next, o)
				}
			}
			out = next
		}
		for i := range out {
			out[i].permits = 0
		}
		return out
	}
	if in.slot < 0 || in.slot >= semSlotsMax {
		return nil
	}
	if in.kind == opDecide || in.kind == opResume {
		return s.withSlot(in.slot, stepGate(s.slots[in.slot], in.opInput))
	}
	if in.kind == opGrant {
		if in.outcome != "" { // refused: only PERMITS_MISMATCH says something
			if in.outcome == semPermitsMismatch && s.permits != 0 && in.permits == s.permits {
				return nil
			}
			return []semState{s}
		}
		switch {
		case in.permits == 0: // a grant found by its request ID, whose N the history lost: the slot's rules only
		case s.permits != 0 && in.permits != s.permits:
			return nil // granted under another N
		case uint64(in.slot) >= in.permits:
			return nil // a slot past N: an N+1st permit
		}
		if s.permits != 0 && uint64(in.slot) >= s.permits {
			return nil // a slot past the recorded N
		}
		for i, sl := range s.slots {
			if i != in.slot && sl.known && sl.holder == in.lease {
				return nil // the lease holds another slot: a permit is one slot
			}
		}
		if in.permits != 0 {
			s.permits = in.permits
		}
	}
	return s.withSlot(in.slot, p.stepRegistry(s.slots[in.slot], in.opInput))
}

// withSlot is s with slot i in each of the given states.
func (s semState) withSlot(i int, slots []modelState) []semState {
	out := make([]semState, len(slots))
	for k, sl := range slots {
		out[k] = s
		out[k].slots[i] = sl
	}
	return out
}

func describeSemOp(in semInput) string {
	switch {
	case in.kind == opGrant && in.outcome != "":
		return fmt.Sprintf("%s acquire %s n=%d → %s", in.proc, in.name, in.permits, in.outcome)
	case in.kind == opGrant:
		return fmt.Sprintf("%s acquire %s n=%d → slot %d lease %s fence %d", in.proc, in.name, in.permits, in.slot, in.lease, in.fence)
	case in.kind == opRestore:
		return "store restored (or went back)"
	}
	return fmt.Sprintf("%s slot %d: %s", in.name, in.slot, describeOp(in.opInput))
}
