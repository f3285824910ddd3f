package sim

// party is a participant in a round: the registry, the resource's gate,
// and up to three workers. The adversary sits on the network and needs no
// party of its own (it is never partitioned away from its target).
type party int

const (
	pRegistry party = iota
	pGate
	pWorkerA
	pWorkerB
	pWorkerC
	partyCount
)

var partyNames = [partyCount]string{"registry", "gate", "a", "b", "c"}

func (p party) String() string { return partyNames[p] }

// msgKind names a message for faults that target one kind.
type msgKind int

const (
	msgAcquire msgKind = iota
	msgAcquireReply
	msgRenew
	msgRenewReply
	msgRelease
	msgReleaseReply
	msgWrite
	msgWriteReply
	msgQuery
	msgQueryReply
	msgJob // a handed-off job, from the resource's outbox to its worker
)

var msgNames = [...]string{"acquire", "acquire answer", "renew", "renew answer", "release", "release answer",
	"write", "write answer", "query", "query answer", "job"}

func (k msgKind) String() string { return msgNames[k] }

// Network limits and shapes, in true simulated milliseconds.
const (
	delayMsMin     = 1      // one-way delay floor
	delayMsMax     = 10     // usual one-way delay ceiling
	slowShare      = 0.03   // share of messages on a slow path
	slowDelayMsMax = 300    // slow-path ceiling
	lateShare      = 0.05   // with FaultLate: share of messages held back
	lateDelayMsMin = 3000   // a late message is at least this old
	lateDelayMsMax = 30_000 // and at most this old
	dupShare       = 0.15   // with FaultDuplicate: share delivered twice
	dupDelayMsMax  = 2000   // the copy trails by up to this
	lostRenewShare = 0.5    // with FaultLostRenew: share of renewal answers lost
	lostAckShare   = 0.3    // with FaultLostAck: share of write answers lost
)

// partition cuts two parties apart for [fromMs, toMs).
type partition struct {
	a, b         party
	fromMs, toMs int64
}

// cut reports whether a and b are partitioned at true time t.
func (w *world) cut(a, b party, t int64) bool {
	for _, p := range w.partitions {
		if (p.a == a && p.b == b || p.a == b && p.b == a) && t >= p.fromMs && t < p.toMs {
			return true
		}
	}
	return false
}

// cutDuring reports whether a and b were partitioned at any instant of
// the true interval [fromMs, toMs].
func (w *world) cutDuring(a, b party, fromMs, toMs int64) bool {
	for _, p := range w.partitions {
		if (p.a == a && p.b == b || p.a == b && p.b == a) && p.fromMs <= toMs && p.toMs > fromMs {
			return true
		}
	}
	return false
}

// send delivers a message from one party to another after a simulated
// delay, unless a fault loses it; it may deliver a copy too. A partition
// drops messages sent while it is up and messages that arrive while it is.
func (w *world) send(from, to party, kind msgKind, deliver func()) {
	if w.cut(from, to, w.now) {
		w.tracef("drop %s→%s %s (partition)", from, to, kind)
		return
	}
	switch {
	case kind == msgRenewReply && w.on[FaultLostRenew] && w.rng.chance(lostRenewShare),
		kind == msgWriteReply && w.on[FaultLostAck] && w.rng.chance(lostAckShare):
		w.tracef("drop %s→%s %s (lost answer)", from, to, kind)
		return
	}
	arrive := func() {
		if w.cut(from, to, w.now) {
			w.tracef("drop %s→%s %s (partition on arrival)", from, to, kind)
			return
		}
		deliver()
	}
	d := w.delayMs()
	w.after(d, arrive)
	if w.on[FaultDuplicate] && w.rng.chance(dupShare) {
		w.after(d+w.rng.between(0, dupDelayMsMax), arrive)
	}
}

// delayMs draws one message's one-way delay.
func (w *world) delayMs() int64 {
	switch {
	case w.on[FaultLate] && w.rng.chance(lateShare):
		return w.rng.between(lateDelayMsMin, lateDelayMsMax)
	case w.rng.chance(slowShare):
		return w.rng.between(delayMsMax, slowDelayMsMax)
	}
	return w.rng.between(delayMsMin, delayMsMax)
}
