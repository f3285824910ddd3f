package sim

import (
	"fmt"

	"github.com/fencegate/fencegate/gate"
)

// Counts is what the checker measured over some rounds. Counts of rounds
// merge in round order, so the totals do not depend on parallelism.
type Counts struct {
	Rounds    int
	Events    int
	Decisions int
	Accepted  int
	Outcomes  [16]int // by gate.Outcomes index

	// Safety: each must be 0.
	StaleAccepted         int // accepted while not the holder, or below a fence already accepted
	StaleNotHolder        int // of which: not the registry's holder at the acceptance instant
	StaleAfterHigherFence int // of which: a higher fence had been accepted already
	ForgedAccepted        int // adversarial envelopes accepted
	ForgedByKind          [attackCount]int
	AttacksSent           [attackCount]int
	HighestFencePolluted  int // a rejection changed highestFence
	SegmentSkipAccepted   int // a segment accepted out of contract order
	RegressionAccepted    int // a regressed grant accepted after an equal or higher fence

	// Availability: each must be 0 too.
	SpuriousPauses  int // a pause while the registry never went backwards
	BlockedHandoffs int // the newest holder's first write refused for a reason not its own
	GhostWaiters    int // a queued ticket of a request that already had an answer
	UnusableGrants  int // a grant whose local deadline had passed when it arrived: given up unused

	// The downstream hop: stale and duplicate effects must be 0.
	JobsHandedOff    int
	JobsApplied      int
	StaleDownstream  int // a job applied after a job of a higher fence at its target
	DuplicateEffects int // one job applied twice

	// AdapterInconsistent: rounds ended by an adapter check failing (an
	// answer its store contradicts, a receipt query that errs). Required
	// to be 0.
	AdapterInconsistent int

	// Store faults injected in the object mode (Config.StoreFaults).
	StoreBatchFailed, StoreLost412, StoreLostError int

	Applied             int // business changes applied
	Fenced              int // of which authenticated and fence-checked
	RegressionAlarms    int // FENCE_REGRESSION alarms (pauses in enforce mode)
	RegressionSuspected int // REGRESSION_SUSPECTED alarms (no pause)
	RegressedGrants     int // grants the registry issued at or below a fence it had issued before
	// The other ways a restored registry goes backwards: a grant said HELD
	// again after a higher fence superseded it or a commit ended it, and a
	// lease expired before the expiry the registry had committed (a
	// renewal forgotten).
	RevivedGrants     int
	ForgottenRenewals int
	// RegressionNotAlarmed counts rounds where a regressed grant reached
	// the gate and no alarm of either kind was raised: safe, but the
	// operator is not told. Must be 0.
	RegressionNotAlarmed int
	// ClientSawForgottenRequest counts restarted workers whose journalled
	// request ID came back with a different grant: the registry lost state.
	ClientSawForgottenRequest int
	OperatorResumes           int

	HandoffMs    []int64 // lease end → next holder HELD
	FirstWriteMs []int64 // lease end → next holder's first accepted write

	UnknownEntered    int   // OWNERSHIP_UNKNOWN entries
	UnknownMaxMs      int64 // longest OWNERSHIP_UNKNOWN or MUTATION_UNKNOWN until resolved
	Reconciles        int   // MUTATION_UNKNOWN reconciles completed
	UnknownUnresolved int   // unresolved at a round's end

	BeyondBoundRounds   int // rounds whose gate clock lagged beyond the skew bound
	BeyondBoundDetected int // of which the skew monitor noticed
	SlippedBeyondBound  int // accepts only the clock bound would have stopped
	SlippedUndetected   int // of which in rounds where nothing noticed the lag

	Violations      []Violation // the first ViolationsMax
	ViolationsTotal int
	Digest          uint64 // event-log digest of the rounds, in order
}

// ViolationsMax bounds the violations kept with their details.
const ViolationsMax = 50

// Violation is one broken safety property, with what reproduces it.
type Violation struct {
	Round  int    `json:"round"`
	Seed   uint64 `json:"seed"`      // the run's seed
	Kind   string `json:"kind"`      // e.g. stale-accepted
	Detail string `json:"detail"`    // what the checker saw
	Repro  string `json:"repro"`     // a command that replays exactly this round
	RoundS uint64 `json:"roundSeed"` // the derived seed of the round
}

func (c *Counts) violation(round int, roundSeed uint64, kind, detail string) {
	c.ViolationsTotal++
	if len(c.Violations) < ViolationsMax {
		c.Violations = append(c.Violations, Violation{Round: round, Kind: kind, Detail: detail, RoundS: roundSeed})
	}
}

func (c *Counts) unknownResolved(ms int64) { c.UnknownMaxMs = max(c.UnknownMaxMs, ms) }

func (c *Counts) reconciled(ms int64) {
	c.Reconciles++
	c.UnknownMaxMs = max(c.UnknownMaxMs, ms)
}

// merge adds o (a later round) into c.
func (c *Counts) merge(o *Counts) {
	c.Rounds += o.Rounds
	c.Events += o.Events
	c.Decisions += o.Decisions
	c.Accepted += o.Accepted
	for i := range c.Outcomes {
		c.Outcomes[i] += o.Outcomes[i]
	}
	c.StaleAccepted += o.StaleAccepted
	c.StaleNotHolder += o.StaleNotHolder
	c.StaleAfterHigherFence += o.StaleAfterHigherFence
	c.ForgedAccepted += o.ForgedAccepted
	for i := range c.ForgedByKind {
		c.ForgedByKind[i] += o.ForgedByKind[i]
		c.AttacksSent[i] += o.AttacksSent[i]
	}
	c.HighestFencePolluted += o.HighestFencePolluted
	c.SegmentSkipAccepted += o.SegmentSkipAccepted
	c.RegressionAccepted += o.RegressionAccepted
	c.SpuriousPauses += o.SpuriousPauses
	c.BlockedHandoffs += o.BlockedHandoffs
	c.GhostWaiters += o.GhostWaiters
	c.UnusableGrants += o.UnusableGrants
	c.JobsHandedOff += o.JobsHandedOff
	c.JobsApplied += o.JobsApplied
	c.StaleDownstream += o.StaleDownstream
	c.DuplicateEffects += o.DuplicateEffects
	c.AdapterInconsistent += o.AdapterInconsistent
	c.StoreBatchFailed += o.StoreBatchFailed
	c.StoreLost412 += o.StoreLost412
	c.StoreLostError += o.StoreLostError
	c.RegressionSuspected += o.RegressionSuspected
	c.Applied += o.Applied
	c.Fenced += o.Fenced
	c.RegressionAlarms += o.RegressionAlarms
	c.RegressedGrants += o.RegressedGrants
	c.RevivedGrants += o.RevivedGrants
	c.ForgottenRenewals += o.ForgottenRenewals
	c.RegressionNotAlarmed += o.RegressionNotAlarmed
	c.ClientSawForgottenRequest += o.ClientSawForgottenRequest
	c.OperatorResumes += o.OperatorResumes
	c.HandoffMs = append(c.HandoffMs, o.HandoffMs...)
	c.FirstWriteMs = append(c.FirstWriteMs, o.FirstWriteMs...)
	c.UnknownEntered += o.UnknownEntered
	c.UnknownMaxMs = max(c.UnknownMaxMs, o.UnknownMaxMs)
	c.Reconciles += o.Reconciles
	c.UnknownUnresolved += o.UnknownUnresolved
	c.BeyondBoundRounds += o.BeyondBoundRounds
	c.BeyondBoundDetected += o.BeyondBoundDetected
	c.SlippedBeyondBound += o.SlippedBeyondBound
	c.SlippedUndetected += o.SlippedUndetected
	for _, v := range o.Violations {
		if len(c.Violations) < ViolationsMax {
			c.Violations = append(c.Violations, v)
		}
	}
	c.ViolationsTotal += o.ViolationsTotal
	c.Digest = mixDigest(c.Digest, o.Digest)
}

// mixDigest chains digests: order matters.
func mixDigest(a, b uint64) uint64 {
	const prime = 1099511628211
	h := a ^ 0xcbf29ce484222325
	for i := 0; i < 8; i++ {
		h ^= (b >> (8 * i)) & 0xff
		h *= prime
	}
	return h
}

var outcomeIndexes = func() map[gate.Outcome]int {
	m := make(map[gate.Outcome]int, len(gate.Outcomes))
	for i, o := range gate.Outcomes {
		m[o] = i
	}
	return m
}()

func outcomeIndex(o gate.Outcome) int {
	if i, ok := outcomeIndexes[o]; ok {
		return i
	}
	panic(fmt.Sprintf("sim: unknown gate outcome %q", o))
}
