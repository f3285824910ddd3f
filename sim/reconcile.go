package sim

import (
	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/gate"
)

// reconcile resolves a MUTATION_UNKNOWN: it asks the resource about u's
// operation, over the simulated network, until the client's own decision
// (client.Unknown.Judge, what client.Resolver decides with) says ACCEPTED
// or PROVEN_ABSENT. An UNDETERMINED answer makes the worker fence the
// resource (a newer grant writes, so highestFence passes u's fence) and
// ask again later.
func (w *world) reconcile(k *worker, u client.Unknown) {
	w.reconcilesUp++
	since, tok, done := w.now, 0, false
	var ask func()
	ask = func() {
		tok++
		mine := tok
		w.send(k.id, pGate, msgQuery, func() {
			a := w.res.query(u.OperationID, u.FenceToken)
			w.send(pGate, k.id, msgQueryReply, func() {
				if done || mine != tok {
					return
				}
				res, err := u.Judge(a)
				if err != nil {
					panic("sim: the resource's receipts contradict a write: " + err.Error())
				}
				if res.Verdict == gate.VerdictUndetermined {
					k.fenceForRecovery() // nobody else may ever raise the fence
					w.after(reconcileMs, ask)
					return
				}
				done = true
				w.reconcilesUp--
				w.counts.reconciled(w.now-since, w.chk.afterRestore)
				w.tracef("%s: MUTATION_UNKNOWN of %s fence %d segment %d resolved %s", k.name, u.OperationID, u.FenceToken, u.SegmentSeq, res.Verdict)
			})
		})
		w.after(2*reconcileMs, func() { // the ask or its answer was lost
			if !done && mine == tok {
				ask()
			}
		})
	}
	ask()
}
