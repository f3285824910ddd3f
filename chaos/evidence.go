package chaos

import (
	"fmt"
	"sort"

	"github.com/anishathalye/porcupine"
)

// evidenceOpsMax bounds the operations an Illegal verdict's evidence
// lists.
const evidenceOpsMax = 24

// evidence explains an Illegal verdict without the HTML: for each
// partition porcupine could not linearize, the operations (in call
// order) around the first one its longest partial linearization leaves
// out, marked X when left out. Times are seconds from the partition's
// first call.
func evidence(model porcupine.Model, ops []porcupine.Operation) []string {
	var out []string
	for _, part := range partitionByResource(ops) {
		res, info := porcupine.CheckOperationsVerbose(model, part, checkTimeout)
		if res != porcupine.Illegal {
			continue
		}
		var longest []int
		for _, l := range info.PartialLinearizations()[0] {
			if len(l) > len(longest) {
				longest = l
			}
		}
		in := map[int]bool{}
		for _, i := range longest {
			in[i] = true
		}
		order := make([]int, len(part))
		for i := range order {
			order[i] = i
		}
		sort.Slice(order, func(a, b int) bool { return part[order[a]].Call < part[order[b]].Call })
		first := 0
		for k, i := range order {
			if !in[i] {
				first = k
				break
			}
		}
		base := part[order[0]].Call
		out = append(out, fmt.Sprintf("resource %s: %d of %d operations linearize; the first left out is #%d",
			part[0].Input.(opInput).resource, len(longest), len(part), first))
		for k := max(0, first-evidenceOpsMax/2); k < min(len(order), first+evidenceOpsMax/2); k++ {
			op := part[order[k]]
			mark := " "
			if !in[order[k]] {
				mark = "X"
			}
			x := op.Input.(opInput)
			line := fmt.Sprintf("%s #%d [%.3f, %.3f] %s", mark, k, float64(op.Call-base)/1e9, float64(op.Return-base)/1e9, describeOp(x))
			if x.kind == opGrant {
				line += fmt.Sprintf(" issued %.3f expires %.3f", float64(x.issuedMs*1e6-base)/1e9, float64(x.expiresMs*1e6-base)/1e9)
			}
			out = append(out, line)
		}
	}
	return out
}
