package adapt

import (
	"fmt"
	"time"

	"github.com/fencegate/fencegate/gate"
)

// The operator actions' pure halves, shared by every adapter: each takes
// the resource's locked state and returns the next state and the line the
// adapter records with the operator's name, or an error and no change.
// The adapter stores the next state after Decider.CheckStore.

// SetModeAction moves st to mode (shadow → enforce only; gate.ChangeMode).
func SetModeAction(st gate.FenceState, mode gate.Mode) (gate.FenceState, string, error) {
	next, err := gate.ChangeMode(st.Mode, mode)
	if err != nil {
		return st, "", err
	}
	detail := fmt.Sprintf("set-mode %s → %s", st.Mode, next)
	st.Mode = next
	return st, detail, nil
}

// RaiseMinPolicyAction raises st's minimum grant policy generation to gen
// (it only rises, and stays within gate.CounterMax).
func RaiseMinPolicyAction(st gate.FenceState, gen uint64) (gate.FenceState, string, error) {
	if gen < st.MinPolicyGeneration || gen > gate.CounterMax {
		return st, "", fmt.Errorf("gate: min policy generation %d: must be between the current %d and %d", gen, st.MinPolicyGeneration, uint64(gate.CounterMax))
	}
	detail := fmt.Sprintf("set-min-policy-generation %d → %d", st.MinPolicyGeneration, gen)
	st.MinPolicyGeneration = gen
	return st, detail, nil
}

// ResumeAction lifts st's pause with the registry floor an operator
// states (gate.Resume), at now by the gate's clock.
func ResumeAction(st gate.FenceState, registryFloor uint64, now time.Time, note string) (gate.FenceState, string, error) {
	next, err := gate.Resume(st, registryFloor, now)
	if err != nil {
		return st, "", err
	}
	return next, fmt.Sprintf("resume registry floor %d > highestFence %d; was paused: %s; note: %s",
		registryFloor, st.HighestFence, st.PausedReason, note), nil
}
