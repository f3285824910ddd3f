package chaos

import "github.com/fencegate/fencegate/gate"

// opKind is what one operation of the checked history is.
type opKind int

const (
	opGrant   opKind = iota + 1 // an acquire or query answered with a HELD grant
	opRenew                     // a renewal answered (ok or a definite refusal)
	opRelease                   // a release answered, or lost (then it may or may not have happened)
	opStatus                    // a status query answered HELD
	opDecide                    // a gate decision
	opRestore                   // etcd restored from a snapshot
	opRepair                    // registry floor raised for the resource
	opResume                    // gate resumed with a floor
)

// opInput is one operation's input and output together (the output is
// the answer; porcupine passes both to Step).
type opInput struct {
	kind     opKind
	resource string
	proc     string
	lease    string
	callMs   int64
	// grants
	fence     uint64
	issuedMs  int64
	expiresMs int64
	ttlMs     int64
	// decisions
	seq     uint64
	grant   string // grant digest
	outcome string // gate outcome, record.ResultUnknown, or for renew/release "ok"/a code/"lost"
	floor   uint64
}

// modelState is one resource: the registry's fence register and lease
// holder, and the gate's fence state. It is comparable.
type modelState struct {
	known     bool   // the registry's state is known (false after a restore until a grant shows it)
	fenceMax  uint64 // highest fence granted since the last restore (or the floor raised)
	holder    string // lease of the current holder, "" for none
	holderExp int64  // a lower bound of the holder's expiry, registry clock (ms)
	// pending are the releases sent whose answers were lost and that have
	// not taken effect yet, each as "lease*copies", sorted (pending.go):
	// any of them may take effect before any later registry operation.
	pending string
	// restoresLeft is how many restores (and regressions) the history has
	// after this state: what bounds the copies of a pending release that
	// can still matter (pendingCap).
	restoresLeft int

	highest uint64 // gate: highestFence
	lastSeq uint64 // gate: last segment accepted under highest
	grantH  string // gate: grant accepted under highest
	paused  bool
	floor   uint64 // gate: floor stated at the last resume
}

// grantSlackMs absorbs millisecond truncation between the registry's
// instants and the processes' nanosecond timestamps (one machine clock).
const grantSlackMs = 20

// modelParams are the registry limits the model judges exclusivity by,
// and the history's restores.
type modelParams struct {
	lockDelayMs int64
	restores    int // restore operations in each registry partition (modelFor)
}

// authOutcomes are decided before any resource state is read.
var authOutcomes = map[string]bool{
	string(gate.Malformed): true, string(gate.BadProof): true, string(gate.BindingMismatch): true,
	string(gate.IdentityMismatch): true, string(gate.EpochRevoked): true,
}

// stepRegistry is the registry part of the model: fences strictly rise
// within one history of the store, and a new holder is granted only after
// the previous one released or expired (plus lock-delay). A release whose
// answer was lost may take effect at any instant after it was sent: it is
// pending from its operation on, and before any later operation the
// holder's pending release either has taken effect or not.
func (p modelParams) stepRegistry(s modelState, in opInput) []modelState {
	if in.kind == opRelease && in.outcome == "lost" {
		s.pending = pendingAdd(s.pending, in.lease)
		return []modelState{capPending(s)}
	}
	out := p.stepRegistryAt(s, in)
	if rest, ok := pendingTake(s.pending, s.holder); ok {
		gone := s
		gone.holder, gone.pending = "", rest
		out = append(out, p.stepRegistryAt(gone, in)...)
	}
	for i := range out {
		out[i] = capPending(out[i])
	}
	return out
}

// capPending drops the copies of pending releases that can no longer
// take effect, so that states differing only in those merge (without it,
// a run's lost releases multiply the states the search keeps). A copy
// takes effect only while its lease is the holder, and a lease that is
// not the holder of a known registry becomes it again only after a
// restore: each lease keeps at most one copy per time it can still be
// the holder (the restores left, plus one when it is the holder or the
// registry's state is unknown).
func capPending(s modelState) modelState {
	if s.pending == "" {
		return s
	}
	s.pending = pendingCap(s.pending, func(lease string) int {
		if lease == s.holder || !s.known {
			return s.restoresLeft + 1
		}
		return s.restoresLeft
	})
	return s
}

// stepRegistryAt steps s by one answered operation.
func (p modelParams) stepRegistryAt(s modelState, in opInput) []modelState {
	switch in.kind {
	case opGrant:
		if s.known && in.lease == s.holder {
			return []modelState{s} // the same grant answered again
		}
		if s.known && (in.fence <= s.fenceMax || s.holder != "" && in.issuedMs+grantSlackMs < s.holderExp+p.lockDelayMs) {
			return nil
		}
		s.known, s.fenceMax, s.holder, s.holderExp = true, in.fence, in.lease, in.expiresMs
	case opRenew:
		if in.outcome != "ok" {
			return []modelState{s}
		}
		switch {
		case !s.known:
			s.known, s.holder, s.holderExp = true, in.lease, in.callMs+in.ttlMs
		case s.holder != in.lease:
			return nil // renewed a lease the registry had given to another
		default:
			s.holderExp = max(s.holderExp, in.callMs+in.ttlMs)
		}
	case opRelease:
		if in.outcome == "ok" && s.holder == in.lease {
			s.holder = ""
		}
	case opStatus:
		if s.known && s.holder != in.lease {
			return nil // HELD about a lease that is not the holder
		}
	case opRestore:
		s.known, s.fenceMax, s.holder, s.holderExp = false, 0, "", 0
		s.restoresLeft = max(s.restoresLeft-1, 0)
	case opRepair:
		s.fenceMax = max(s.fenceMax, in.floor)
	}
	return []modelState{s}
}

// stepGate is the gate part: the per-resource fence register.
func stepGate(s modelState, in opInput) []modelState {
	f, o := in.fence, in.outcome
	if in.kind == opResume {
		if !s.paused {
			return nil
		}
		s.paused, s.floor = false, in.floor
		return []modelState{s}
	}
	if o == "unknown" { // the commit's outcome is unknown: either
		out := []modelState{s}
		if acc, ok := accept(s, in); ok {
			out = append(out, acc)
		}
		return out
	}
	replay := f < s.highest || f == s.highest && in.seq <= s.lastSeq
	switch {
	case authOutcomes[o] || o == string(gate.Replayed) && replay:
		return []modelState{s}
	case s.paused:
		if o != string(gate.ResourcePaused) {
			return nil
		}
		return []modelState{s}
	}
	ok := false
	switch gate.Outcome(o) {
	case gate.Accepted:
		acc, ok := accept(s, in)
		if !ok {
			return nil
		}
		return []modelState{acc}
	case gate.FenceRegression:
		if ok = f <= max(s.highest, s.floor); ok {
			s.paused = true
		}
	case gate.StaleOwner:
		ok = f < s.highest || f <= s.floor
	case gate.SegmentGap:
		ok = f > s.highest && in.seq != 1 || f == s.highest && in.seq != s.lastSeq+1
	case gate.RootMismatch:
		ok = f == s.highest
	case gate.Quarantined:
		ok = replay
	case gate.NotHeld, gate.ProofExpired:
		ok = f >= s.highest
	case gate.PolicyStale:
		ok = true
	}
	if !ok {
		return nil
	}
	return []modelState{s}
}

// accept is the only way highestFence moves: a new fence above both the
// highest and the resumed floor starting at segment 1, or the next
// segment of the grant that holds the highest.
func accept(s modelState, in opInput) (modelState, bool) {
	f := in.fence
	switch {
	case s.paused || f <= s.floor:
		return s, false
	case f > s.highest && in.seq == 1:
		s.highest, s.lastSeq, s.grantH = f, 1, in.grant
	case f == s.highest && in.grant == s.grantH && in.seq == s.lastSeq+1:
		s.lastSeq = in.seq
	default:
		return s, false
	}
	return s, true
}
