package sim

import (
	"context"
	"fmt"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/wire"
)

// The read/write lock rounds' workers (rwlock.go): each takes a reader's
// lease, the writer's, the writer's then a downgrade, or the plain lock,
// holds it for a moment (renewing once, freezing past its TTL and
// lock-delay, or dying), writes through the gate (a reader tries to),
// and releases; rwOpsPerWorker times.

// What an operation takes.
const (
	rwRead = iota
	rwWrite
	rwDown
	rwPlain
)

type rwWorker struct {
	w    *rwWorld
	id   int
	name string
	reg  *registry.Registry
	ops  int
	reqN int
	// clock is the worker's own: its holds, pauses and waits run on it.
	clock partyClock
}

// timer runs fn after localMs of the worker's clock.
func (k *rwWorker) timer(localMs int64, fn func()) {
	k.w.at(k.w.now+k.clock.durationMs(localMs), fn)
}

// rwOp is one operation's draw.
type rwOp struct {
	kind     int
	resource string
	id, op   string
	ttl      uint64
	waitMs   uint64
	freeze   bool
	crash    bool
	renew    bool
	asLock   bool  // a reader's envelope names the lock, not NAME/_read
	retry    bool  // a downgrade is asked again (its answer lost)
	holdMs   int64 // a reader's hold (a downgrade's, after it), a writer's
	writeMs  int64 // a downgrading writer's hold before it downgrades
	abandon  int64 // when > 0: give the wait up this long after it starts
	vanish   int64 // when > 0: die waiting this long after it starts (the ticket is left behind)
}

func (k *rwWorker) next() {
	if k.ops == 0 {
		return
	}
	k.ops--
	k.reqN++
	w := k.w
	o := rwOp{id: fmt.Sprintf("req-%d-%d", k.id, k.reqN), op: fmt.Sprintf("op-%d-%d", k.id, k.reqN)}
	switch u := w.rng.float(0, 1); {
	case u < rwReadShare:
		o.kind = rwRead
	case u < rwReadShare+rwWriteShare:
		o.kind = rwWrite
	case u < rwReadShare+rwWriteShare+rwDowngradeShare:
		o.kind = rwDown
	default:
		o.kind = rwPlain
	}
	o.resource = w.plain
	if o.kind != rwPlain {
		o.resource = w.pool[w.rng.pick(len(w.pool))]
	}
	hold := int64(w.lim.StatusProofTTLMs + w.lim.ClockSkewMaxMs) // a downgrade's hold-back, when the write lease outlives it
	o.ttl = uint64(w.rng.edgy(int64(w.lim.TTLMsMin), int64(w.lim.TTLMsMax), int64(w.lim.TTLMsMin), hold, hold+1, int64(w.lim.TTLMsMax)))
	o.waitMs = uint64(w.rng.edgy(rwWaitMsMin, int64(w.lim.WaitMsMax), rwWaitMsMin, int64(w.lim.WaitMsMax)))
	o.freeze = w.rng.chance(rwFreezeShare)
	o.holdMs = w.rng.between(computeMsMin, rwHoldMsMax)
	if o.freeze {
		o.holdMs = int64(o.ttl+w.lim.LockDelayMs) + w.rng.between(0, rwFreezeMsExtra)
	}
	o.writeMs = w.rng.between(computeMsMin, rwHoldMsMax) / 2
	o.crash = !o.freeze && w.rng.chance(rwCrashShare)
	o.renew = !o.freeze && !o.crash && w.rng.chance(rwRenewShare)
	o.asLock = w.rng.chance(0.5)
	o.retry = w.rng.chance(rwRetryShare)
	switch u := w.rng.float(0, 1); {
	case u < rwAbandonShare:
		o.abandon = w.rng.between(1, int64(o.waitMs)-1)
	case u < rwAbandonShare+rwVanishShare:
		o.vanish = w.rng.between(1, int64(o.waitMs)-1)
	}
	w.mix(uint64(o.kind), o.ttl, o.waitMs)
	k.acquire(o.resource, o.id, o.kind == rwRead, o, nil, func(is wire.Issued) {
		switch o.kind {
		case rwRead:
			w.c.Reads++
			k.holdRead(o, is, o.holdMs)
		case rwDown:
			w.c.Writes++
			k.downgrade(o, is)
		default:
			if o.kind == rwPlain {
				w.c.Plain++
			} else {
				w.c.Writes++
			}
			k.holdWrite(o, is)
		}
	})
}

// again starts the worker's next operation after a short pause.
func (k *rwWorker) again() { k.timer(k.w.rng.between(0, 500), k.next) }

// acquire starts one acquire of resource (a reader's lease when read)
// under request ID id and calls granted with its grant; a refusal, a
// wait that ran out or one given up starts the next operation instead.
// in, when non-nil, is the intent already registered for it.
func (k *rwWorker) acquire(resource, id string, read bool, o rwOp, in *rwIntent, granted func(wire.Issued)) {
	w := k.w
	req := wire.AcquireRequest{Resource: resource, OperationClass: "settle", RequestID: id, OperationID: o.op, TTLMs: o.ttl, WaitMs: o.waitMs}
	if read {
		req.Mode = wire.ModeRead
	}
	a, err := k.reg.StartAcquire(k.name, req)
	if err != nil {
		panic("sim: an acquire refused at its start: " + err.Error())
	}
	if in == nil {
		in = w.intent(k.name, id, resource, read)
	}
	p := &rwPending{intent: in, a: a, key: lsKey{k.name, id}}
	p.reply = func(is wire.Issued, err error) {
		if !w.answered(is, err) {
			k.again()
			return
		}
		if read && w.readersLive(resource, is.Grant.Lease) {
			w.c.Shared++
		}
		granted(is)
	}
	if o.abandon > 0 {
		k.timer(o.abandon, func() { w.giveUp(p) })
	}
	if o.vanish > 0 {
		k.timer(o.vanish, func() {
			if w.vanish(p) {
				k.again() // the worker's next life
			}
		})
	}
	p.deadline = w.now + int64(o.waitMs)
	w.wait(p)
}

// readersLive reports whether a reader other than lease holds name live.
func (w *rwWorld) readersLive(name, lease string) bool {
	for _, l := range w.liveOn(w.truth[name]) {
		if l != lease && w.truth[name].leases[l].read {
			return true
		}
	}
	return false
}

// renew renews is's lease once, and returns the lease as it now is; a
// reader's entitlement moves to the renewal's instant plus its TTL.
func (k *rwWorker) renew(is wire.Issued) wire.Issued {
	w := k.w
	g := is.Grant
	got, err := k.reg.Renew(context.Background(), k.name, g.Resource, g.Lease)
	w.mix(uint64(len(wire.CodeOf(err))))
	if err != nil {
		return is
	}
	w.c.Renewed++
	if l := w.truth[wire.RecordName(g.Resource)].leases[g.Lease]; l != nil {
		l.entitled = max(l.entitled, w.regNowMs()+int64(g.TTLMs))
	}
	if got.Grant == nil {
		return is
	}
	return got
}

// release gives is's lease back.
func (k *rwWorker) release(is wire.Issued) {
	err := k.reg.Release(context.Background(), k.name, is.Grant.Resource, is.Grant.Lease)
	k.w.mix(uint64(len(wire.CodeOf(err))))
}

// life runs a holder's life from its grant for holdMs: it dies (crash),
// or renews once when o says, then calls finish (after holdMs, or after
// its freeze).
func (k *rwWorker) life(o rwOp, is wire.Issued, holdMs int64, finish func(wire.Issued)) {
	w := k.w
	if o.crash {
		// Dead holding: nothing is written when its lease ends, so only
		// a waiter that looks at its WakeAt (the poll) sees the end.
		w.c.Crashed++
		k.again() // the worker's next life
		return
	}
	if o.freeze {
		w.c.Frozen++
	}
	if !o.renew {
		k.timer(holdMs, func() { finish(is) })
		return
	}
	k.timer(holdMs/2, func() {
		is = k.renew(is)
		k.timer(holdMs-holdMs/2, func() { finish(is) })
	})
}

// holdRead holds a reader's lease: it tries a write (READ_GRANT) and
// releases.
func (k *rwWorker) holdRead(o rwOp, is wire.Issued, holdMs int64) {
	k.life(o, is, holdMs, func(is wire.Issued) {
		k.w.readerWrite(k.name, is, o.op, o.asLock)
		k.release(is)
		k.again()
	})
}

// holdWrite holds the writer's lease (or the plain lock): it writes
// through the gate and releases.
func (k *rwWorker) holdWrite(o rwOp, is wire.Issued) {
	k.life(o, is, o.holdMs, func(is wire.Issued) {
		k.w.write(k.name, is, o.op)
		k.release(is)
		k.again()
	})
}

// downgrade holds the writer's lease for a moment, writes, and turns it
// into a reader's (registry.Downgrade; under the two-step control a
// release, then a read acquire), which it then holds as a reader does —
// the freeze, crash and renewal drawn are the reader's.
func (k *rwWorker) downgrade(o rwOp, write wire.Issued) {
	w := k.w
	k.timer(o.writeMs, func() {
		w.write(k.name, write, o.op)
		g := write.Grant
		id := o.id + rwDownSuffix
		in := w.intent(k.name, id, o.resource, true)
		in.downFrom, in.downFence = g.Lease, g.FenceToken
		w.c.Downgrades++
		rest := o.holdMs
		if w.twoSteps {
			k.release(write)
			k.acquire(o.resource, id, true, o, in, func(is wire.Issued) { k.holdRead(o, is, rest) })
			return
		}
		req := wire.DowngradeRequest{Resource: o.resource, Lease: g.Lease, RequestID: id}
		is, err := k.reg.Downgrade(context.Background(), k.name, req)
		if !w.answered(is, err) {
			k.release(write)
			k.again()
			return
		}
		if o.retry {
			// The answer was lost: the same request again, on the other
			// replica, must answer the same reader's grant.
			again, err := w.regs[(k.id+1)%2].Downgrade(context.Background(), k.name, req)
			w.mix(uint64(len(wire.CodeOf(err))))
			if err != nil || again.Grant == nil || again.Grant.Lease != is.Grant.Lease || again.Grant.FenceToken != is.Grant.FenceToken {
				w.c.DowngradeGap++
				w.violate("downgrade-retry", "%s: %s's downgrade asked again answered %v, %+v, not its reader lease %s", o.resource, in.name, err, again.Grant, is.Grant.Lease)
			}
		}
		k.holdRead(o, is, rest)
	})
}
