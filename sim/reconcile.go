package sim

import (
	"context"

	"github.com/fencegate/fencegate/gate"
)

// alarm is a FENCE_REGRESSION: an operator raises the registry's floor
// above the gate's highestFence and resumes the resource.
func (w *world) alarm() {
	if w.operatorDue {
		return
	}
	w.operatorDue = true
	w.after(w.rng.between(operatorDelayMin, operatorDelayMax), func() {
		w.operatorDue = false
		floor := w.res.g.state(w.res.name).HighestFence + 1
		if _, err := w.reg.RaiseFloor(context.Background(), w.res.name, floor); err != nil {
			w.tracef("operator: raise floor: %v", err)
			return
		}
		if err := w.res.g.resume(w.res.name, floor); err != nil {
			w.tracef("operator: resume: %v", err)
			return
		}
		w.counts.OperatorResumes++
		w.tracef("operator raised the floor to %d and resumed", floor)
	})
}

// reconcile resolves a MUTATION_UNKNOWN by asking the resource, by
// operation ID, until the answer is ACCEPTED or PROVEN_ABSENT.
func (w *world) reconcile(k *worker, op string, fence uint64) {
	w.reconcilesUp++
	since, tok, done := w.now, 0, false
	var ask func()
	ask = func() {
		tok++
		mine := tok
		w.send(k.id, pGate, msgQuery, func() {
			v := w.res.judge(op, fence)
			w.send(pGate, k.id, msgQueryReply, func() {
				if done || mine != tok {
					return
				}
				if v == gate.VerdictUndetermined {
					k.fenceForRecovery() // nobody else may ever raise the fence
					w.after(reconcileMs, ask)
					return
				}
				done = true
				w.reconcilesUp--
				w.counts.reconciled(w.now - since)
			})
		})
		w.after(2*reconcileMs, func() { // the ask or its answer was lost
			if !done && mine == tok {
				ask()
			}
		})
	}
	ask()
}
