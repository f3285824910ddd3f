package chaos

import (
	"fmt"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/fencegate/fencegate/chaos/record"
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
	return evidenceOf(model, partitionByObject(ops), func(op porcupine.Operation) string { return objectOf(op.Input.(opInput)) },
		func(op porcupine.Operation) (string, opInput) { x := op.Input.(opInput); return describeOp(x), x })
}

// semEvidence is evidence for the semaphore model (semPartition).
func semEvidence(model porcupine.Model, ops []porcupine.Operation) []string {
	return evidenceOf(model, semPartition(ops), func(op porcupine.Operation) string { return semObjectOf(op.Input.(semInput)) },
		func(op porcupine.Operation) (string, opInput) {
			x := op.Input.(semInput)
			return describeSemOp(x), x.opInput
		})
}

// rwEvidence is evidence for the read/write model (rwPartition).
func rwEvidence(model porcupine.Model, ops []porcupine.Operation) []string {
	return evidenceOf(model, rwPartition(ops), func(op porcupine.Operation) string { return objectOf(op.Input.(rwInput).opInput) },
		func(op porcupine.Operation) (string, opInput) {
			x := op.Input.(rwInput)
			return describeRWOp(x), x.opInput
		})
}

// evidenceOf is evidence over the given partitions: object names a
// partition by one of its operations, describe an operation (and gives
// its opInput, for a grant's instants).
func evidenceOf(model porcupine.Model, parts [][]porcupine.Operation, object func(porcupine.Operation) string,
	describe func(porcupine.Operation) (string, opInput)) []string {
	var out []string
	for _, part := range parts {
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
		out = append(out, fmt.Sprintf("%s: %d of %d operations linearize; the first left out is #%d",
			object(part[0]), len(longest), len(part), first))
		for k := max(0, first-evidenceOpsMax/2); k < min(len(order), first+evidenceOpsMax/2); k++ {
			op := part[order[k]]
			mark := " "
			if !in[order[k]] {
				mark = "X"
			}
			d, x := describe(op)
			line := fmt.Sprintf("%s #%d [%.3f, %.3f] %s", mark, k, float64(op.Call-base)/1e9, float64(op.Return-base)/1e9, d)
			if x.kind == opGrant && x.outcome == "" {
				line += fmt.Sprintf(" issued %.3f expires %.3f", float64(x.issuedMs*1e6-base)/1e9, float64(x.expiresMs*1e6-base)/1e9)
			}
			out = append(out, line)
		}
	}
	return out
}

// undecidedTimeout bounds the search of one partition when undecided
// looks for the ones that kept the whole check from a verdict.
const undecidedTimeout = 20 * time.Second

// undecided names the partitions of an Unknown verdict: each one
// porcupine does not decide within undecidedTimeout on its own, with its
// size and lost answers (what makes a search large).
func undecided(model porcupine.Model, ops []porcupine.Operation) []string {
	return undecidedOf(model, partitionByObject(ops), func(op porcupine.Operation) (string, opInput) {
		x := op.Input.(opInput)
		return objectOf(x), x
	})
}

// semUndecided is undecided for the semaphore model (semPartition).
func semUndecided(model porcupine.Model, ops []porcupine.Operation) []string {
	return undecidedOf(model, semPartition(ops), func(op porcupine.Operation) (string, opInput) {
		x := op.Input.(semInput)
		return semObjectOf(x), x.opInput
	})
}

// rwUndecided is undecided for the read/write model (rwPartition).
func rwUndecided(model porcupine.Model, ops []porcupine.Operation) []string {
	return undecidedOf(model, rwPartition(ops), func(op porcupine.Operation) (string, opInput) {
		x := op.Input.(rwInput)
		return objectOf(x.opInput), x.opInput
	})
}

// undecidedOf is undecided over the given partitions; object names an
// operation's partition and gives its opInput.
func undecidedOf(model porcupine.Model, parts [][]porcupine.Operation, object func(porcupine.Operation) (string, opInput)) []string {
	var out []string
	for _, part := range parts {
		if porcupine.CheckOperationsTimeout(model, part, undecidedTimeout) != porcupine.Unknown {
			continue
		}
		lost := 0
		for _, op := range part {
			if _, in := object(op); in.outcome == record.ResultLost || in.outcome == record.ResultUnknown {
				lost++
			}
		}
		name, _ := object(part[0])
		out = append(out, fmt.Sprintf("%s: %d operations, %d of them lost or unknown", name, len(part), lost))
	}
	return out
}
