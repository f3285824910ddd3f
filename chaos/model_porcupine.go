package chaos

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

// modelFor is the model for a history of operations: the run's
// lock-delay, and its restores (each registry partition has one restore
// operation per restore or regression of the run).
func modelFor(ops []porcupine.Operation) porcupine.Model {
	restores := map[string]int{}
	most := 0
	for _, op := range ops {
		if in := op.Input.(opInput); in.kind == opRestore {
			restores[in.resource]++
			most = max(most, restores[in.resource])
		}
	}
	return newModel(modelParams{lockDelayMs: lockDelayMs, restores: most})
}

// newModel is the porcupine model of one resource's registry and gate,
// partitioned into one object each (partitionByObject).
func newModel(p modelParams) porcupine.Model {
	nd := porcupine.NondeterministicModel{
		Partition: partitionByObject,
		Init:      func() []interface{} { return []interface{}{modelState{known: true, restoresLeft: p.restores}} },
		Step: func(state, input, _ interface{}) []interface{} {
			s, in := state.(modelState), input.(opInput)
			var next []modelState
			if in.kind == opDecide || in.kind == opResume {
				next = stepGate(s, in)
			} else {
				next = p.stepRegistry(s, in)
			}
			out := make([]interface{}, len(next))
			for i := range next {
				out[i] = next[i]
			}
			return out
		},
		DescribeOperation: func(input, _ interface{}) string { return describeOp(input.(opInput)) },
		DescribeState: func(state interface{}) string {
			s := state.(modelState)
			return fmt.Sprintf("registry{known=%t fenceMax=%d holder=%q exp=%d pending=%q restoresLeft=%d} gate{H=%d seq=%d paused=%t floor=%d}",
				s.known, s.fenceMax, s.holder, s.holderExp, s.pending, s.restoresLeft, s.highest, s.lastSeq, s.paused, s.floor)
		},
	}
	return nd.ToModel()
}

// partitionByObject splits a history into one partition per resource
// and object: the registry's record of the resource (grants, renewals,
// releases, status, restores, floors) and the gate's fence state
// (decisions, resumes). No operation reads or changes both (stepRegistry
// and stepGate share no field), so the history is linearizable if and
// only if every partition is (linearizability is local), and each search
// is far smaller than the two objects' interleavings together.
func partitionByObject(h []porcupine.Operation) [][]porcupine.Operation {
	idx := map[string]int{}
	var out [][]porcupine.Operation
	for _, op := range h {
		r := objectOf(op.Input.(opInput))
		i, ok := idx[r]
		if !ok {
			i = len(out)
			idx[r] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], op)
	}
	return out
}

// objectOf names the partition of an operation: its resource, then
// "registry" or "gate".
func objectOf(in opInput) string {
	if in.kind == opDecide || in.kind == opResume {
		return in.resource + " gate"
	}
	return in.resource + " registry"
}

func describeOp(in opInput) string {
	switch in.kind {
	case opGrant:
		return fmt.Sprintf("%s grant %s fence %d", in.proc, in.lease, in.fence)
	case opRenew, opRelease, opStatus:
		return fmt.Sprintf("%s %s %s → %s", in.proc, [...]string{"", "", "renew", "release", "status"}[in.kind], in.lease, in.outcome)
	case opDecide:
		return fmt.Sprintf("%s fence %d seq %d → %s", in.proc, in.fence, in.seq, in.outcome)
	case opRestore:
		return "store restored (or went back)"
	case opRepair:
		return fmt.Sprintf("registry floor %d", in.floor)
	case opResume:
		return fmt.Sprintf("gate resume floor %d", in.floor)
	}
	return "?"
}
