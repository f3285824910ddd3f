package sim

import (
	"time"

	"github.com/fencegate/fencegate/client/core"
	"github.com/fencegate/fencegate/wire"
)

// Worker timing, in milliseconds of the worker's own clock. A lease's TTL
// and the client's margins are drawn (settings.go).
const (
	acquireWaitMs = 1000 // a worker queues this long behind the holder (the registry's FIFO waiters), then asks again
	// longWaitTTLs: in a long-hold round (FaultLongHold) a worker queues
	// this many of its own TTLs (at most longWaitMsMax), so a grant may
	// come after more than a TTL of waiting; not Session.Lock's 25 s
	// chunk, because a lost answer to a long poll costs the whole wait
	// before the worker asks again.
	longWaitTTLs    = 2
	longWaitMsMax   = 6000   // as before the sweep (two 3 s TTLs): a lost answer to a long poll costs the whole wait
	longHoldMsMax   = 60_000 // a long hold lasts 2-5 of the holder's TTLs, at most this
	callTimeoutMs   = 300    // the call timeout before the sweep: one of the edges drawn
	ackTimeoutMs    = 300    // a write with no answer by then is MUTATION_UNKNOWN
	busyRetryMsMin  = 150    // acquire retry after a refusal, jittered up to twice this
	reconcileMs     = 1000   // MUTATION_UNKNOWN: ask the resource this often
	computeMsMin    = 50     // time to compute one segment
	computeMsMax    = 250
	opsPerWorker    = 3 // operations a worker attempts before giving up
	giveUpMs        = 60_000
	pausedBackoffMs = 20_000 // after RESOURCE_PAUSED: wait for the operator
	segmentsMin     = 2
	segmentsMax     = 6
	gapStreakMax    = 5 // SEGMENT_GAP this often in a row: the grant cannot continue
)

// worker is a client process: it acquires the lease (queueing behind the
// holder), writes its operation in segments through the gate, renews, and
// releases. Every lease decision is the client package's own: an
// core.Acquire while it acquires, a core.Lease while it holds (state
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

	// limits are the worker's client options, drawn (settings.go); the
	// cores draw their jitter from the round's PRNG.
	limits core.Limits

	inc         int // incarnation: bumps at each crash, voids old timers and answers
	crashed     bool
	pausedUntil int64

	// The journal survives a crash: written before each request is sent.
	reqN     int
	reqID    string
	reqTTLMs uint64 // the request's TTL, drawn with it: a retry asks for the same
	opID     string
	ackedSeq uint64
	sentSeq  uint64
	opsLeft  int
	// journalLease is the grant ackedSeq and sentSeq count under, granted
	// under request journalReq.
	journalLease string
	journalReq   string

	// probedDeadline is the local deadline the checker's last probe
	// watches (checkDeadline).
	probedDeadline time.Time

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
	pauseOverMs  int64 // FaultPause: the pause lasts the lease's TTL plus this
	holdTTLs     int64 // FaultLongHold: before its first write, keep the lease (renewing) this many TTLs
	holdUntil    int64 // true ms: the long hold ends
	reorderAt    uint64
	payloadAt    uint64
	releaseRace  bool
	lateCopy     bool // FaultLateCopy: the last segment's original is held back and the lease let go without waiting
	lostRelease  bool // FaultLostRelease: the next release is answered OK and its commit lost
}

func newWorker(w *world, id party, clock partyClock) *worker {
	return &worker{w: w, id: id, name: "worker-" + id.String(), clock: clock, opsLeft: opsPerWorker, unknownMs: -1,
		limits: w.drawClientLimits()}
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

// certain reports whether the lease lets the worker start an effect now:
// what the client reports (core.LeaseView.CertainAt, what Lease.State and
// Lease.Ctx say), or under --break lease-clock what it reported before.
func (k *worker) certain() bool { return k.lease != nil && k.reportsCertain(k.lease) }
