package chaos

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

// newModel is the porcupine model of one resource, partitioned by
// resource.
func newModel(p modelParams) porcupine.Model {
	nd := porcupine.NondeterministicModel{
		Partition: partitionByResource,
		Init:      func() []interface{} { return []interface{}{modelState{known: true}} },
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
			return fmt.Sprintf("registry{known=%t fenceMax=%d holder=%q exp=%d} gate{H=%d seq=%d paused=%t floor=%d}",
				s.known, s.fenceMax, s.holder, s.holderExp, s.highest, s.lastSeq, s.paused, s.floor)
		},
	}
	return nd.ToModel()
}

func partitionByResource(h []porcupine.Operation) [][]porcupine.Operation {
	idx := map[string]int{}
	var out [][]porcupine.Operation
	for _, op := range h {
		r := op.Input.(opInput).resource
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

func describeOp(in opInput) string {
	switch in.kind {
	case opGrant:
		return fmt.Sprintf("%s grant %s fence %d", in.proc, in.lease, in.fence)
	case opRenew, opRelease, opStatus:
		return fmt.Sprintf("%s %s %s → %s", in.proc, [...]string{"", "", "renew", "release", "status"}[in.kind], in.lease, in.outcome)
	case opDecide:
		return fmt.Sprintf("%s fence %d seq %d → %s", in.proc, in.fence, in.seq, in.outcome)
	case opRestore:
		return "etcd restore"
	case opRepair:
		return fmt.Sprintf("registry floor %d", in.floor)
	case opResume:
		return fmt.Sprintf("gate resume floor %d", in.floor)
	}
	return "?"
}
