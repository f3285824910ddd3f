package gate

import (
	"errors"
	"fmt"
	"time"

	"github.com/fencegate/fencegate/grant"
)

// Mode is how a resource's gate acts on its decisions.
type Mode string

// Modes. A resource moves shadow → enforce and never back: once enforced,
// verification cannot be switched off (ChangeMode refuses).
const (
	// ModeShadow decides and records every mutation but never rejects: the
	// business change proceeds whatever the outcome. Accepted decisions
	// still advance the fence state and write receipts, so switching to
	// enforce later starts from the true highestFence.
	ModeShadow Mode = "shadow"
	// ModeEnforce rejects every mutation that is not ACCEPTED or REPLAYED.
	ModeEnforce Mode = "enforce"
)

// ParseMode accepts "shadow" or "enforce".
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeShadow, ModeEnforce:
		return m, nil
	}
	return "", fmt.Errorf("gate: mode %q (want shadow or enforce)", s)
}

// ErrModeDowngrade is returned when a change would move a resource (or a
// protected table) from enforce back to shadow or off.
var ErrModeDowngrade = errors.New("gate: mode downgrade refused: enforce is final")

// ChangeMode returns the mode after an operator asks for to while in from.
// Going from enforce to anything else is refused with ErrModeDowngrade.
func ChangeMode(from, to Mode) (Mode, error) {
	if _, err := ParseMode(string(to)); err != nil {
		return from, fmt.Errorf("%w: %v", ErrModeDowngrade, err)
	}
	if from == ModeEnforce && to != ModeEnforce {
		return from, fmt.Errorf("%w: %s → %s", ErrModeDowngrade, from, to)
	}
	return to, nil
}

// FenceState is one resource's fence state: what the gate stores per resource
// and locks for the duration of a decision.
type FenceState struct {
	Resource string
	Mode     Mode
	// HighestFence is the largest fence ever accepted. It only rises.
	HighestFence uint64
	// Root is the operation root accepted under HighestFence.
	Root grant.Digest
	// LastSegmentSeq is the last segment accepted under HighestFence.
	LastSegmentSeq uint64
	// GrantDigest is the digest of the grant whose segment was accepted
	// last under HighestFence, or zero when unknown (no accept yet, or an
	// adapter that does not load it; the check it enables is then
	// skipped). The registry never gives two grants one fence, so another
	// grant at HighestFence, proven HELD, means the registry went back.
	GrantDigest grant.Digest
	// GrantIssuedAt is the registry's IssuedAt of that grant, or zero when
	// unknown (an adapter or a database from before schema 6). The
	// regression rule compares status proofs of lower fences with it.
	GrantIssuedAt time.Time
	// MinPolicyGeneration is the lowest grant policy generation accepted.
	MinPolicyGeneration uint64
	// Paused is set by a FENCE_REGRESSION; only Resume clears it.
	Paused bool
	// PausedReason says which decision paused the resource.
	PausedReason string
	// Floor is the registry fence floor an operator stated at the last
	// Resume (0: never resumed). Every fence at or below it was issued
	// before the operator's repair: such a write is stale, and is new
	// evidence of a regression only if its grant was issued after
	// FloorAt. Floor only rises.
	Floor uint64
	// FloorAt is the gate's clock at that Resume.
	FloorAt time.Time
}

// ErrResumeRefused is returned when Resume's preconditions do not hold.
var ErrResumeRefused = errors.New("gate: resume refused")

// Resume returns s unpaused. It is the pure half of the operator action
// that lifts a FENCE_REGRESSION pause: the operator states the registry's
// fence floor for the resource (the value its next grant will be above),
// and the gate refuses unless that floor is above HighestFence — otherwise
// the regressed registry would hand out fences the gate must reject or,
// worse, reuse ones it has seen. HighestFence is never lowered. The floor
// and now (the gate's clock) are recorded as Floor and FloorAt: grants at
// or below the floor are from before the repair and stay rejected without
// pausing again, unless one was issued after it.
func Resume(s FenceState, registryFloor uint64, now time.Time) (FenceState, error) {
	if !s.Paused {
		return s, fmt.Errorf("%w: resource %s is not paused", ErrResumeRefused, s.Resource)
	}
	if registryFloor <= s.HighestFence {
		return s, fmt.Errorf("%w: resource %s: registry floor %d is not above highestFence %d; raise the registry's fence floor first",
			ErrResumeRefused, s.Resource, registryFloor, s.HighestFence)
	}
	s.Paused, s.PausedReason = false, ""
	s.Floor, s.FloorAt = max(s.Floor, registryFloor), now.UTC().Truncate(time.Millisecond)
	return s, nil
}
