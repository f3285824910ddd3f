package sim

import "context"

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
		if _, err := w.registry().RaiseFloor(context.Background(), w.res.name, floor); err != nil {
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
