package sim

import (
	"context"
	"errors"
	"fmt"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
)

// leaseState is a worker's local view of its lease, named as the
// specification names the client states.
type leaseState int

const (
	stIdle leaseState = iota
	stRequested
	stHeld
	stRenewing
	stUnknown // OWNERSHIP_UNKNOWN: no new effects until the registry answers
	stExpired
	stReleased
)

// Worker timing, in milliseconds of the worker's own clock.
const (
	leaseTTLMs      = 3000 // requested server-side TTL
	renewEveryMs    = 1000 // TTL/3
	callTimeoutMs   = 300  // a registry call with no answer by then is lost
	ackTimeoutMs    = 300  // a write with no answer by then is MUTATION_UNKNOWN
	busyRetryMsMin  = 150  // acquire retry after BUSY, jittered up to twice this
	unknownRetryMs  = 300  // OWNERSHIP_UNKNOWN: ask again this often
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
// in segments through the gate, renews, and releases. Its lease logic is
// the specification's client state machine; the real client package's
// machine is unexported, so the simulator drives the registry API directly
// with the same states (see doc.go).
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
	state       leaseState
	is          registry.Issued
	grantBytes  []byte
	statusBytes []byte
	segs        uint64
	callTok     int // outstanding registry call
	ackTok      int // outstanding write
	inflight    uint64
	attemptMs   int64 // first attempt of the current request
	confirmMs   int64 // local instant of the last confirmation's send
	unknownMs   int64 // true instant OWNERSHIP_UNKNOWN began, -1 when not
	writes      int
	gapStreak   int  // SEGMENT_GAP answers in a row
	releasing   bool // the current grant is being released: no renewals, no writes
	draining    bool // waiting for this grant's proofs to expire before releasing
	// proofUntilMs is the latest validUntil (registry clock) of a status
	// proof attached to a write under the current grant.
	proofUntilMs int64
	releaseTry   int
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

func (k *worker) certain() bool { return k.state == stHeld || k.state == stRenewing }

// start begins the worker's first operation.
func (k *worker) start() {
	if k.started || k.crashed {
		return
	}
	k.started = true
	k.newRequest()
	k.acquire()
}

// newRequest journals a fresh request and operation.
func (k *worker) newRequest() {
	k.reqN++
	k.reqID = fmt.Sprintf("req-%s-%d", k.id, k.reqN)
	k.opID = fmt.Sprintf("op-%s-%d", k.id, k.reqN)
	k.ackedSeq, k.sentSeq = 0, 0
	k.attemptMs = k.w.now
	k.segs = uint64(k.w.rng.between(segmentsMin, segmentsMax))
}

// acquire sends (or re-sends, same request ID) the acquire.
func (k *worker) acquire() {
	k.state = stRequested
	k.callTok++
	tok, inc, req := k.callTok, k.inc, registry.AcquireRequest{
		Resource: k.w.res.name, OperationID: k.opID, OperationClass: "settle", RequestID: k.reqID, TTLMs: leaseTTLMs,
	}
	sentLocal := k.localMs()
	k.w.send(k.id, pRegistry, msgAcquire, func() {
		is, err := k.w.reg.Acquire(context.Background(), k.name, req)
		k.w.logCall(msgAcquire, is, err)
		k.w.send(pRegistry, k.id, msgAcquireReply, func() {
			k.run(inc, func() { k.onAcquire(tok, sentLocal, is, err) })
		})
	})
	k.timer(callTimeoutMs, func() {
		if k.callTok == tok && k.state == stRequested {
			k.acquire() // lost: retry with the same request ID
		}
	})
}

func (k *worker) onAcquire(tok int, sentLocal int64, is registry.Issued, err error) {
	if tok != k.callTok || k.state != stRequested {
		return
	}
	k.callTok++
	switch {
	case err != nil:
		if k.w.now > giveUpMs && !k.fencing {
			k.finishOps()
			return
		}
		k.timer(k.w.rng.between(busyRetryMsMin, 2*busyRetryMsMin), k.acquire)
	case is.Status.State == grant.StateHeld:
		k.held(is, sentLocal)
	default:
		// The request's grant already ended (a retry after a crash, or a
		// late answer): whatever was in flight under it is unknown.
		k.lost(is.Grant)
	}
}

// held makes the worker the holder under is.
func (k *worker) held(is registry.Issued, sentLocal int64) {
	same := k.is.Grant != nil && k.is.Grant.Lease == is.Grant.Lease
	if !same {
		k.releasing, k.draining, k.proofUntilMs = false, false, 0
	}
	forgot := k.journalLease != "" && k.journalReq == is.Grant.RequestID && is.Grant.Lease != k.journalLease
	if is.Grant.Lease != k.journalLease {
		// A new grant: its segments start at 1.
		k.journalLease, k.journalReq, k.ackedSeq, k.sentSeq = is.Grant.Lease, is.Grant.RequestID, 0, 0
	}
	k.state, k.is, k.confirmMs = stHeld, is, sentLocal
	if forgot && !k.w.cfg.NaiveRecovery {
		// The registry answered a journalled request ID with a different
		// grant: it lost its state (a restore). Resuming the operation
		// under the new grant would repeat (fence, root) pairs the gate
		// has seen; abandon the operation and start a new one instead.
		k.w.counts.ClientSawForgottenRequest++
		k.w.tracef("%s: request %s answered with another grant %s: registry state lost", k.name, is.Grant.RequestID, is.Grant.Lease)
		k.grantBytes, k.statusBytes = is.Grant.Encode(), is.Status.Encode()
		k.release()
		return
	}
	k.grantBytes, k.statusBytes = is.Grant.Encode(), is.Status.Encode()
	if !same {
		k.w.chk.held(is.Grant.Lease, k.attemptMs)
		k.w.heldHook(k)
	}
	k.w.tracef("%s HELD fence %d lease %s", k.name, is.Grant.FenceToken, is.Grant.Lease)
	k.scheduleRenew()
	k.writeNext()
}

func (k *worker) scheduleRenew() {
	lease := k.is.Grant.Lease
	k.timer(renewEveryMs, func() {
		if k.state == stHeld && k.is.Grant.Lease == lease && !k.releasing && !k.draining {
			k.renew()
		}
	})
}

// renew asks the registry to extend the lease (and for a fresh status
// proof); in OWNERSHIP_UNKNOWN it is also the query that resolves it.
func (k *worker) renew() {
	if k.state == stRenewing {
		return
	}
	if k.state == stHeld {
		k.state = stRenewing
	}
	k.callTok++
	tok, inc, g := k.callTok, k.inc, k.is.Grant
	sentLocal := k.localMs()
	k.w.send(k.id, pRegistry, msgRenew, func() {
		is, err := k.w.reg.Renew(context.Background(), k.name, g.Resource, g.Lease)
		k.w.logCall(msgRenew, is, err)
		k.w.send(pRegistry, k.id, msgRenewReply, func() {
			k.run(inc, func() { k.onRenew(tok, sentLocal, is, err) })
		})
	})
	k.timer(callTimeoutMs, func() {
		if k.callTok == tok {
			k.callTok++
			k.unknown()
		}
	})
}

func (k *worker) onRenew(tok int, sentLocal int64, is registry.Issued, err error) {
	if tok != k.callTok || (k.state != stRenewing && k.state != stUnknown) {
		return
	}
	k.callTok++
	switch {
	case err == nil && is.Status.State == grant.StateHeld:
		k.resolveUnknown()
		k.state, k.confirmMs = stHeld, sentLocal
		k.is, k.statusBytes = is, is.Status.Encode()
		if k.releasing {
			k.release() // the release was interrupted: finish it
			return
		}
		k.scheduleRenew()
		k.writeNext()
	case errors.Is(err, registry.ErrLeaseExpired), errors.Is(err, registry.ErrNotHolder), errors.Is(err, registry.ErrEpochRevoked):
		k.resolveUnknown()
		k.lost(k.is.Grant)
	default:
		k.unknown()
	}
}

// unknown enters (or stays in) OWNERSHIP_UNKNOWN and asks again later.
func (k *worker) unknown() {
	if k.state != stUnknown {
		k.state = stUnknown
		k.unknownMs = k.w.now
		k.w.counts.UnknownEntered++
	}
	k.timer(unknownRetryMs, func() {
		if k.state == stUnknown {
			k.renew()
		}
	})
}

func (k *worker) resolveUnknown() {
	if k.unknownMs >= 0 {
		k.w.counts.unknownResolved(k.w.now - k.unknownMs)
		k.unknownMs = -1
	}
}
