package sim

import (
	"context"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/wire"
)

// This file is the registry's side of a waiting acquire: the real
// registry's Acquisition, stepped by the round's event queue — now, on
// every commit to the resource's record (what a store watch would bring),
// and at the instant it asked to be woken — instead of by Acquire's
// goroutine and timers. The FIFO waiters, the warm handoff on release and
// the claim after an expiry are the registry's own.

// pendingAcquire is one acquire the registry is serving.
type pendingAcquire struct {
	a       *registry.Acquisition
	reg     *registry.Registry // the registry process serving it
	reply   func(wire.Issued, error)
	done    bool
	wakeTok int
}

// serveAcquire starts serving an acquire by owner on the registry replica
// reg and returns the function that ends it early (its caller hung up:
// the ticket is withdrawn).
func (w *world) serveAcquire(reg *registry.Registry, owner string, req wire.AcquireRequest, reply func(wire.Issued, error)) (cancel func()) {
	a, err := reg.StartAcquire(owner, req)
	if err != nil {
		reply(wire.Issued{}, err)
		return func() {}
	}
	p := &pendingAcquire{a: a, reg: reg, reply: reply}
	w.stepAcquire(p, true)
	return func() { w.abandonAcquire(p) }
}

// stepAcquire makes p's next decision; a queued p waits for the next
// commit to the resource or its wake instant. As registry.Acquire, the
// first decision stands on the record the replica cached (a warm acquire
// is one compare-and-swap); a later one reads, as the record a watch
// brings or a poll would.
func (w *world) stepAcquire(p *pendingAcquire, cached bool) {
	if p.done {
		return
	}
	if !w.serving(p.reg) { // the registry restarted: the call died with its process
		p.done = true
		return
	}
	if p.a.Step(context.Background(), cached) {
		p.done = true
		w.dropPending(p)
		is, err := p.a.Result()
		p.reply(is, err)
		return
	}
	w.addPending(p)
	w.tracef("registry: acquire queued, wake at %d ms", p.a.WakeAt().UnixMilli()-epochBase.UnixMilli())
	p.wakeTok++
	tok := p.wakeTok
	w.at(max(p.a.WakeAt().UnixMilli()-epochBase.UnixMilli(), w.now), func() {
		if tok == p.wakeTok {
			w.stepAcquire(p, false)
		}
	})
}

func (w *world) abandonAcquire(p *pendingAcquire) {
	if p.done || !w.serving(p.reg) {
		return
	}
	p.done = true
	w.dropPending(p)
	p.a.Abandon(context.Background())
}

func (w *world) addPending(p *pendingAcquire) {
	for _, q := range w.pending {
		if q == p {
			return
		}
	}
	w.pending = append(w.pending, p)
}

func (w *world) dropPending(p *pendingAcquire) {
	for i, q := range w.pending {
		if q == p {
			w.pending = append(w.pending[:i], w.pending[i+1:]...)
			return
		}
	}
}

// recordChanged is the store's commit hook for the main resource: every
// acquire waiting on it looks again, after the commit (never inside it).
func (w *world) recordChanged() {
	for _, p := range w.pending {
		w.after(0, func() { w.stepAcquire(p, false) })
	}
}

// holdCopy keeps a write's original in the network until a write under
// another grant is accepted (the next owner wrote), then delivers it.
func (w *world) holdCopy(k *worker, deliver func()) {
	w.held = append(w.held, heldCopy{lease: k.lease.View().Issued.Grant.Lease, deliver: deliver})
}

type heldCopy struct {
	lease   string
	deliver func()
}

// accepted tells the held copies that lease had a write accepted.
func (w *world) acceptedUnder(lease string) {
	keep := w.held[:0]
	for _, h := range w.held {
		if h.lease != lease {
			w.after(w.rng.between(1, 50), h.deliver)
			continue
		}
		keep = append(keep, h)
	}
	w.held = keep
}
