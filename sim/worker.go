package sim

import (
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/client/core"
	"github.com/fencegate/fencegate/wire"
)

// Worker timing, in milliseconds of the worker's own clock.
const (
	leaseTTLMs    = 3000 // requested server-side TTL
	acquireWaitMs = 1000 // a worker queues this long behind the holder (the registry's FIFO waiters), then asks again
	// longWaitMs is the queueing of a long-hold round (FaultLongHold):
	// longer than the TTL, so a grant may come after more than a TTL of
	// waiting; not Session.Lock's 25 s chunk, because a lost answer to a
	// long poll costs the whole chunk before the worker asks again.
	longWaitMs      = 2 * leaseTTLMs
	callTimeoutMs   = 300  // client.Options.CallTimeout: a registry call with no answer by then is lost
	ackTimeoutMs    = 300  // a write with no answer by then is MUTATION_UNKNOWN
	busyRetryMsMin  = 150  // acquire retry after a refusal, jittered up to twice this
	reconcileMs     = 1000 // MUTATION_UNKNOWN: ask the resource this often
	computeMsMin    = 50   // time to compute one segment
	computeMsMax    = 250
	opsPerWorker    = 3 // operations a worker attempts before giving up
	giveUpMs        = 60_000
	pausedBackoffMs = 20_000 // after RESOURCE_PAUSED: wait for the operator
	segmentsMin     = 2
	segmentsMax     = 6
	gapStreakMax    = 5 // SEGMENT_GAP this often in a row: the grant cannot continue
)

// clientOptions are the client's own defaults, with the call timeout the
// simulated network's round trips call for (the lease core caps it at
// TTL/4 anyway). The cores draw their jitter from the round's PRNG.
var clientOptions = client.Options{CallTimeout: callTimeoutMs * time.Millisecond}.Limits()

// worker is a client process: it acquires the lease (queueing behind the
// holder), writes its operation in segments through the gate, renews, and
// releases. Every lease decision is the client package's own: an
// AcquireCore while it acquires, a LeaseCore while it holds (state
// machine, renewal timing, envelope checks, the release's drain). The
// worker is their driver — it carries their calls over the simulated
// network and their timers on its own clock — plus the application around
// them: which segments to write, what to do after each answer, a journal
// that survives a crash.
type worker struct {
	w     *world
	id    party
	name  string
	clock partyClock

	inc         int // incarnation: bumps at each crash, voids old timers and answers
	crashed     bool
	pausedUntil int64

	// The journal survives a crash: written before each request is sent.
	reqN     int
	reqID    string
	opID     string
	ackedSeq uint64
	sentSeq  uint64
	opsLeft  int
	// journalLease is the grant ackedSeq and sentSeq count under, granted
	// under request journalReq.
	journalLease string
	journalReq   string

	// Volatile state.
	acq       *core.Acquire // while acquiring
	lease     *core.Lease   // while a grant is held (until it ends)
	is        wire.Issued   // the grant held (for the checker and the books)
	wakeTok   int           // the live wake timer of the current core
	segs      uint64
	ackTok    int // outstanding write
	inflight  uint64
	attemptMs int64 // first attempt of the current request
	// answered is the acquire call whose answer ended the acquire: when
	// it was sent (worker clock) and when it reached the registry
	// (registry clock, Unix ms), for the unusable-grant check.
	answeredSent    time.Time
	answeredArrived int64
	unknownMs       int64 // true instant OWNERSHIP_UNKNOWN began, -1 when not
	writes          int
	gapStreak       int // SEGMENT_GAP answers in a row
	started         bool
	done            bool
	fencing         bool  // recovering a MUTATION_UNKNOWN by fencing the resource
	fences          int   // fencings this round (fenceForRecovery)
	backoffMs       int64 // extra wait before the next request

	// Faults armed for this worker.
	pauseAtWrite int
	pauseMs      int64
	holdMs       int64 // FaultLongHold: before its first write, keep the lease (renewing) this long
	holdUntil    int64 // true ms: the long hold ends
	reorderAt    uint64
	payloadAt    uint64
	releaseRace  bool
	lateCopy     bool // FaultLateCopy: the last segment's original is held back and the lease let go without waiting
}

func newWorker(w *world, id party, clock partyClock) *worker {
	return &worker{w: w, id: id, name: "worker-" + id.String(), clock: clock, opsLeft: opsPerWorker, unknownMs: -1}
}

// timer runs fn after localMs of the worker's clock, unless it crashed
// since; while paused, it runs when the pause ends.
func (k *worker) timer(localMs int64, fn func()) {
	inc := k.inc
	k.w.after(k.clock.durationMs(localMs), func() { k.run(inc, fn) })
}

// timerAt runs fn once the worker's clock reads at (or now, if past).
func (k *worker) timerAt(at time.Time, fn func()) {
	k.timer(max(at.Sub(k.localNow()).Milliseconds()+1, 0), fn)
}

// run is how every event reaches the worker.
func (k *worker) run(inc int, fn func()) {
	if k.crashed || inc != k.inc {
		return
	}
	if k.w.now < k.pausedUntil {
		k.w.at(k.pausedUntil, func() { k.run(inc, fn) })
		return
	}
	fn()
}

func (k *worker) localNow() time.Time { return k.clock.at(k.w.now) }

func (k *worker) certain() bool { return k.lease != nil && k.lease.Certain() }
