package sim

import (
	"fmt"
	"reflect"

	"github.com/fencegate/fencegate/gate"
)

// Counts is what the checker measured over some rounds. Counts of rounds
// merge in round order, so the totals do not depend on parallelism. Every
// field merges by one rule (see merge): a new counter needs no code.
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
	LostUpdates           int // a commit's record did not extend the one it replaced (decided on another record)
	FenceReusedByRegistry int // a fence granted at or below one issued in the same history of the store (no restore between)

	// Availability: each must be 0 too.
	SpuriousPauses  int // a pause while the registry never went backwards
	BlockedHandoffs int // the newest holder's first write refused for a reason not its own
	GhostWaiters    int // a queued ticket of a request that already had an answer
	UnusableGrants  int // a grant whose local deadline had passed when it arrived: given up unused

	// The lease clock (issue 42): each must be 0.
	HeldPastDeadline    int // a lease reported HELD or RENEWING after its local deadline (and its driver's timer on it)
	EffectsPastDeadline int // a worker started an effect after its lease's local deadline
	// Of which under leases shorter than shortTTLMs.
	HeldPastDeadlineShort, EffectsPastDeadlineShort int

	// The settings swept: acquires whose TTL the client refused before
	// sending (below client.TTLMin for the worker's margins), and the
	// TTLs drawn, by band: at the client's minimum (within 1 ms), below
	// 3 s, below 15 s, below 60 s, 60 s and above.
	TTLRefused int
	TTLDrawn   [5]int

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

	HandoffMs []int64 // lease end → next holder HELD
	// HandoffExcusedMs: the same, across a partition between the next
	// holder and the registry or after a restore (not budgeted).
	HandoffExcusedMs []int64
	FirstWriteMs     []int64 // lease end → next holder's first accepted write

	UnknownEntered int   // OWNERSHIP_UNKNOWN entries
	UnknownMaxMs   int64 `merge:"max"` // longest OWNERSHIP_UNKNOWN or MUTATION_UNKNOWN until resolved
	// UnknownAfterRestoreMaxMs: the same, for those resolved after the
	// store was restored in their round (not budgeted: a revived lease
	// holds its resource for whatever TTL it had, up to 10 min).
	UnknownAfterRestoreMaxMs int64 `merge:"max"`
	Reconciles               int   // MUTATION_UNKNOWN reconciles completed
	UnknownUnresolved        int   // unresolved at a round's end
	// UnknownOpenAfterRestore: MUTATION_UNKNOWN reconciles open at a
	// round's end behind a grant the restored registry issued to nobody
	// (checker.blockedByRestore; not budgeted).
	UnknownOpenAfterRestore int

	BeyondBoundRounds   int // rounds whose gate clock lagged beyond the skew bound
	BeyondBoundDetected int // of which the skew monitor noticed
	SlippedBeyondBound  int // accepts only the clock bound would have stopped
	SlippedUndetected   int // of which in rounds where nothing noticed the lag

	Violations      []Violation `merge:"own"` // the first ViolationsMax
	ViolationsTotal int
	Digest          uint64 `merge:"own"` // event-log digest of the rounds, in order
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

// unknownResolved records how long an UNKNOWN took to resolve.
func (c *Counts) unknownResolved(ms int64, afterRestore bool) {
	if afterRestore {
		c.UnknownAfterRestoreMaxMs = max(c.UnknownAfterRestoreMaxMs, ms)
		return
	}
	c.UnknownMaxMs = max(c.UnknownMaxMs, ms)
}

// ttlDrawn counts a drawn TTL in its band (TTLDrawn); least is the
// client's shortest for the worker's margins.
func (c *Counts) ttlDrawn(ttlMs, least int64) {
	switch {
	case ttlMs <= least+1:
		c.TTLDrawn[0]++
	case ttlMs < 3000:
		c.TTLDrawn[1]++
	case ttlMs < 15_000:
		c.TTLDrawn[2]++
	case ttlMs < 60_000:
		c.TTLDrawn[3]++
	default:
		c.TTLDrawn[4]++
	}
}

func (c *Counts) reconciled(ms int64, afterRestore bool) {
	c.Reconciles++
	c.unknownResolved(ms, afterRestore)
}

// merge adds o (a later round) into c, field by field as countsMerge
// says: one mechanism for every counter, so a counter added to Counts is
// merged without anyone remembering to (TestMergeTakesEveryField).
func (c *Counts) merge(o *Counts) {
	cv, ov := reflect.ValueOf(c).Elem(), reflect.ValueOf(o).Elem()
	for i, how := range countsMerge {
		a, b := cv.Field(i), ov.Field(i)
		switch how {
		case mergeSum:
			addInts(a, b)
		case mergeMax:
			a.SetInt(max(a.Int(), b.Int()))
		case mergeAppend:
			a.Set(reflect.AppendSlice(a, b))
		}
	}
	for _, v := range o.Violations {
		if len(c.Violations) < ViolationsMax {
			c.Violations = append(c.Violations, v)
		}
	}
	c.Digest = mixDigest(c.Digest, o.Digest)
}

// How a field of Counts merges: by its type, unless its `merge` tag says
// otherwise. Integers and arrays of them add up, slices of them
// concatenate in round order; `merge:"max"` keeps the larger; `merge:"own"`
// fields are merged by hand in merge (the capped violations, the chained
// digest). A field of any other type has no rule, and the package does
// not start.
type mergeHow int

const (
	mergeSum mergeHow = iota
	mergeMax
	mergeAppend
	mergeOwn
)

var countsMerge = mergePlan(reflect.TypeFor[Counts]())

func mergePlan(t reflect.Type) []mergeHow {
	plan := make([]mergeHow, t.NumField())
	for i := range plan {
		f := t.Field(i)
		k := f.Type.Kind()
		switch tag := f.Tag.Get("merge"); {
		case tag == "own":
			plan[i] = mergeOwn
		case tag == "max" && isInt(k):
			plan[i] = mergeMax
		case tag != "":
			panic(fmt.Sprintf("sim: Counts.%s: merge rule %q does not apply to %s", f.Name, tag, f.Type))
		case isInt(k) || k == reflect.Array && isInt(f.Type.Elem().Kind()):
			plan[i] = mergeSum
		case k == reflect.Slice && isInt(f.Type.Elem().Kind()):
			plan[i] = mergeAppend
		default:
			panic(fmt.Sprintf("sim: Counts.%s (%s) has no merge rule", f.Name, f.Type))
		}
	}
	return plan
}

func isInt(k reflect.Kind) bool { return k == reflect.Int || k == reflect.Int64 }

// addInts adds b into a: integers, or arrays of them element by element.
func addInts(a, b reflect.Value) {
	if a.Kind() != reflect.Array {
		a.SetInt(a.Int() + b.Int())
		return
	}
	for j := range a.Len() {
		a.Index(j).SetInt(a.Index(j).Int() + b.Index(j).Int())
	}
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
