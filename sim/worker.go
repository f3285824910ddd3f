package sim

import (
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/registry"
)

// Worker timing, in milliseconds of the worker's own clock.
const (
	leaseTTLMs      = 3000 // requested server-side TTL
	callTimeoutMs   = 300  // a registry call with no answer by then is lost (client.Options.CallTimeout)
	ackTimeoutMs    = 300  // a write with no answer by then is MUTATION_UNKNOWN
	busyRetryMsMin  = 150  // acquire retry after BUSY, jittered up to twice this
	reconcileMs     = 1000 // MUTATION_UNKNOWN: ask the resource this often
	computeMsMin    = 50   // time to compute one segment
	computeMsMax    = 250
	proofMarginMs   = 600 // a status proof is used only while local now + this < validUntil
	opsPerWorker    = 3   // operations a worker attempts before giving up
	giveUpMs        = 60_000
	pausedBackoffMs = 20_000 // after RESOURCE_PAUSED: wait for the operator
	segmentsMin     = 2
	segmentsMax     = 6
	gapStreakMax    = 5 // SEGMENT_GAP this often in a row: the grant cannot continue
)

// worker is a client process: it acquires the lease, writes its operation
// in segments through the gate, renews, and releases. Its lease runs the
// client package's own pure Machine (the transition table) and Schedule
// (when to renew, refresh, stop, query) with the client's defaults; the
// worker is the event-driven shell the client's Lease is for a real
// process (see lease.go).
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
	m           client.Machine  // the client's transition table
	sched       client.Schedule // the client's timing, on the worker's clock
	tickTok     int             // the live timer chain of sched
	is          registry.Issued
	grantBytes  []byte
	statusBytes []byte
	segs        uint64
	callTok     int // outstanding registry call
	ackTok      int // outstanding write
	inflight    uint64
	attemptMs   int64 // first attempt of the current request
	unknownMs   int64 // true instant OWNERSHIP_UNKNOWN began, -1 when not
	writes      int
	gapStreak   int  // SEGMENT_GAP answers in a row
	releasing   bool // the current grant is being released: no renewals, no writes
	draining    bool // waiting for this grant's proofs to expire before releasing
	// proofUntilMs is the latest validUntil (registry clock) of a status
	// proof attached to a write under the current grant.
	proofUntilMs int64
	started      bool
	done         bool
	fencing      bool  // recovering a MUTATION_UNKNOWN by fencing the resource
	backoffMs    int64 // extra wait before the next request

	// Faults armed for this worker.
	pauseAtWrite int
	pauseMs      int64
	reorderAt    uint64
	payloadAt    uint64
	releaseRace  bool
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

func (k *worker) localMs() int64 { return k.clock.atMs(k.w.now) }

func (k *worker) localNow() time.Time { return k.clock.at(k.w.now) }
