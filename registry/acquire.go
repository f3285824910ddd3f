package registry

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/wire"
)

// cancelWaitTimeoutMs bounds the best-effort withdrawal of a waiter's
// ticket after its caller gave up; a ticket that cannot be withdrawn
// lapses at its deadline anyway.
const cancelWaitTimeoutMs = 2000

// Acquire grants owner the lease on req.Resource with the next fence token,
// or returns the grant already issued under (owner, req.RequestID) with its
// current state (HELD, or its final state): never a second grant, and a
// request that has an answer is answered from its entry before any queue
// action, whatever WaitMs says. With WaitMs > 0 it queues FIFO behind
// earlier waiters until the lease is free and it is at the head, the wait
// ends (ErrWaitTimeout) or ctx ends (the ticket is withdrawn). Wakeups come
// from store watches, with bounded polling on the registry's clock for
// what no write announces (an expiry, a vanished head waiter). It is the
// shell of Acquisition, which the simulator drives step by step. With
// req.Permits > 0 the resource is a counting semaphore and the grant is
// on one of its slots (see the package doc, "Counting semaphores").
func (r *Registry) Acquire(ctx context.Context, owner string, req wire.AcquireRequest) (wire.Issued, error) {
	a, err := r.StartAcquire(owner, req)
	if err != nil {
		return wire.Issued{}, err
	}
	if req.Permits > 0 {
		return r.acquireSemaphore(ctx, a)
	}
	var events <-chan RecordEvent
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	cached := true
	for !a.Step(ctx, cached) {
		if events == nil {
			if events, err = r.store.Watch(wctx, req.Resource, a.watchFrom()); err != nil {
				events = nil // poll instead
			}
		}
		if cached, err = r.sleep(ctx, a, &events); err != nil {
			a.Abandon(ctx)
			return wire.Issued{}, fmt.Errorf("registry: acquire %s: waiting: %w", req.Resource, err)
		}
	}
	return a.Result()
}

// Acquisition is one acquire in progress, stepped one decision
// (lockstate.DecideAcquire) at a time: Acquire drives it with a store
// watch and timers, the simulator with its event queue. Each Step
// decides once (and commits: joining the queue, keeping its place,
// taking the lease) without sleeping; between steps the caller waits for
// the resource's record to change (a store event after the revision the
// step decided on) or the registry clock to reach WakeAt. Not safe for
// concurrent use.
type Acquisition struct {
	r      *Registry
	in     lockstate.AcquireInput
	queued bool
	done   bool
	issued wire.Issued
	err    error
	wakeMs int64
	from   uint64
}

// acquireStepsMax bounds the decisions one Step makes back to back (a
// purged old entry, a handed-over lease, contention while queued): each
// is followed by a fresh read, so more means a livelocked store.
const acquireStepsMax = 16

// StartAcquire validates an acquire and fixes its wait's deadline by the
// registry clock (lockstate.NewAcquireInput). It touches no store.
func (r *Registry) StartAcquire(owner string, req wire.AcquireRequest) (*Acquisition, error) {
	in, err := lockstate.NewAcquireInput(owner, req, r.now(), r.lim)
	if err != nil {
		return nil, err
	}
	return &Acquisition{r: r, in: in}, nil
}

// Step makes the acquire's next decision; cached lets it decide on the
// record this Registry last saw (a watch just delivered one) instead of
// reading. It reports whether the acquire has its answer (Result); if not,
// the caller is queued: call Step again when the record changes or at
// WakeAt. An error while queued withdraws the ticket.
func (a *Acquisition) Step(ctx context.Context, cached bool) bool {
	if a.done {
		return true
	}
	if a.in.Req.Permits > 0 {
		return a.stepSemaphore(ctx)
	}
	r, in := a.r, a.in
	handed := false // a release handed this request the lease: its first answer is fresh
	for range acquireStepsMax {
		dec, s, rev, now, err := r.acquireStep(ctx, in, cached, a.queued)
		if errors.Is(err, wire.ErrConflict) && a.queued && ctx.Err() == nil {
			cached = false // contention while queued: keep our place, look again
			continue
		}
		if err != nil {
			// A waiting acquire whose caller gave up while its first
			// commit was in flight may have a ticket it never heard of
			// (the commit applied, its answer came too late): withdraw
			// that too. Best effort, and no write where there is none.
			if (a.queued || in.Wait && ctx.Err() != nil) && !errors.Is(err, wire.ErrWaitTimeout) {
				// A wait that ran out keeps its ticket for WaiterGraceMs, so
				// the same request asking again keeps its place; any other
				// end withdraws it.
				r.cancelWait(ctx, in)
			}
			return a.finish(wire.Issued{}, err)
		}
		switch dec.Outcome {
		case lockstate.AcquirePurge:
			cached = false
			continue
		case lockstate.AcquireHanded:
			cached, handed = false, true
			continue
		case lockstate.AcquireGranted:
			is, err := r.issueFresh(dec.Body, rev, now+int64(in.TTLMs), rev, now, s.Settings)
			return a.finish(a.sinceArrival(now, is, err))
		case lockstate.AcquireExisting:
			is, err := r.existing(&s, in.Key(), now, handed)
			return a.finish(a.sinceArrival(now, is, err))
		}
		a.queued = true
		a.from = max(rev, s.Revision) + 1
		a.wakeMs = r.nextWake(in, now)
		return false
	}
	if a.queued {
		r.cancelWait(ctx, in)
	}
	return a.finish(wire.Issued{}, fmt.Errorf("%w: %s: %d decisions in a row without an answer", wire.ErrConflict, in.Req.Resource, acquireStepsMax))
}

// sinceArrival counts a HELD answer's ExpiresAfterMs from the acquire's
// arrival rather than from the answer: the time the acquire waited in the
// queue is time the lease has left that the client cannot see.
// now is the instant the answer was made at.
func (a *Acquisition) sinceArrival(now int64, is wire.Issued, err error) (wire.Issued, error) {
	if err == nil {
		fromArrival(&is, now-a.in.ArrivedMs)
	}
	return is, err
}

// fromArrival moves a HELD answer's ExpiresAfterMs (0: not known, left
// so) waitedMs later: from the answer's instant back to the acquire's
// arrival.
func fromArrival(is *wire.Issued, waitedMs int64) {
	if is.ExpiresAfterMs > 0 {
		is.ExpiresAfterMs += max(waitedMs, 0)
	}
}

func (a *Acquisition) finish(is wire.Issued, err error) bool {
	a.done, a.issued, a.err = true, is, err
	return true
}

// Result is the acquire's answer once Step reported it.
func (a *Acquisition) Result() (wire.Issued, error) { return a.issued, a.err }

// Queued reports whether the acquire holds a ticket in the resource's
// queue.
func (a *Acquisition) Queued() bool { return a.queued && !a.done }

// WakeAt is the registry-clock instant at which a queued acquire should
// step again even if nothing was written: its holder expiring, lock-delay
// ending, the head's claim window closing, its deadline; at most
// WaitPollMsMax after the last step.
func (a *Acquisition) WakeAt() time.Time { return fromMs(a.wakeMs) }

// watchFrom is the store revision from which a write to the resource's
// record is news to a queued acquire.
func (a *Acquisition) watchFrom() uint64 { return a.from }

// Abandon withdraws a queued acquire's ticket because its caller gave up
// (best effort: a ticket that cannot be withdrawn lapses at its deadline,
// or is skipped once it lets a free resource's claim window pass).
func (a *Acquisition) Abandon(ctx context.Context) {
	if a.queued && !a.done {
		a.r.cancelWait(ctx, a.in)
		a.done, a.err = true, fmt.Errorf("registry: acquire %s: abandoned", a.in.Req.Resource)
	}
}

// acquireStep runs one acquire decision to its commit.
func (r *Registry) acquireStep(ctx context.Context, in lockstate.AcquireInput, cached, queued bool) (lockstate.AcquireDecision, Snapshot, uint64, int64, error) {
	var (
		dec lockstate.AcquireDecision
		at  int64
	)
	key := in.Key()
	s, rev, err := r.casLoopMode(ctx, in.Req.Resource, []lockstate.RequestKey{key}, cached, queued, func(s *Snapshot, now int64) (*Write, error) {
		var err error
		at = now
		slot := s.slot(key)
		dec, err = lockstate.DecideAcquire(recordOf(s), slot.Entry, s.Settings, in, now, r.lim)
		if err != nil {
			return nil, err
		}
		if dec.Outcome == lockstate.AcquirePurge {
			return &Write{SettingsRev: s.SettingsRev, Requests: []RequestWrite{{Key: key, Compare: true, ModRev: slot.ModRev}}}, nil
		}
		w := r.writeFor(s, dec.Record, dec.Entries)
		if dec.Outcome == lockstate.AcquireQueued && w != nil && !writes(w, key) {
			// Joining (or staying in) the queue compares the request's own
			// entry as absent (deleting an absent entry writes nothing): a
			// request that already has an answer, whose entry a cached
			// snapshot cannot show, must never queue a ticket. The failed
			// compare brings the entry, and the next decision answers
			// from it.
			w.Requests = append(w.Requests, RequestWrite{Key: key, Compare: true, ModRev: slot.ModRev})
		}
		return w, nil
	})
	return dec, s, rev, at, err
}

// writes reports whether w already writes key's entry.
func writes(w *Write, key lockstate.RequestKey) bool {
	for _, rw := range w.Requests {
		if rw.Key == key {
			return true
		}
	}
	return false
}

// existing answers a retried acquire from the request's entry, with a
// status; or, when fresh (the request was just handed the lease by a
// release and still holds it), as issueFresh does.
func (r *Registry) existing(s *Snapshot, key lockstate.RequestKey, now int64, fresh bool) (wire.Issued, error) {
	slot := s.slot(key)
	if slot.Entry == nil {
		return wire.Issued{}, fmt.Errorf("%w: request %s vanished", wire.ErrNotFound, key.RequestID)
	}
	rec := recordOf(s)
	state := lockstate.EntryState(rec, slot.Entry, s.Settings, now)
	var expires int64
	if state == grant.StateHeld {
		expires = lockstate.LeaseOf(rec, slot.Entry).ExpiresAtMs // the writer's or a reader's
	}
	if fresh && state == grant.StateHeld {
		return r.issueFresh(slot.Entry.Grant, slot.CreateRev, expires, s.Revision, now, s.Settings)
	}
	return r.issue(slot.Entry.Grant, slot.CreateRev, state, expires, s.Revision, now, s.Settings)
}

// sleep waits for the next store event or the instant a's next step is
// due, on the registry's clock. It reports whether the next decision may
// use the cache (a watch delivered the record) or must read.
func (r *Registry) sleep(ctx context.Context, a *Acquisition, events *<-chan RecordEvent) (bool, error) {
	timer := r.clock.After(a.WakeAt().Sub(r.clock.Now()))
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case ev, ok := <-*events:
			if !ok {
				// The watch ended (compaction, a lost leader): poll until
				// the timer, then the caller watches again.
				*events = nil
				continue
			}
			r.rememberRecord(a.in.Req.Resource, ev.Record, ev.ModRev)
			return true, nil
		case <-timer:
			return false, nil
		}
	}
}

// nextWake is the earliest instant at which the cached record could change
// without a write: its holder expiring, lock-delay ending, the head
// waiter's claim window closing, or the wait's deadline; at most
// WaitPollMsMax away, at least a millisecond.
func (r *Registry) nextWake(in lockstate.AcquireInput, now int64) int64 {
	wake := min(now+int64(r.cfg.WaitPollMsMax), in.DeadlineMs)
	r.mu.Lock()
	c, ok := r.cache[in.Req.Resource]
	r.mu.Unlock()
	if ok && c.record != nil {
		if at, changes := lockstate.ChangesAt(c.record, now, r.lim); changes {
			wake = min(wake, at)
		}
	}
	return max(wake, now+1)
}

// cancelWait withdraws the caller's ticket, best effort, even though ctx
// may be over: a ticket left behind only lapses at its deadline.
func (r *Registry) cancelWait(ctx context.Context, in lockstate.AcquireInput) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelWaitTimeoutMs*time.Millisecond)
	defer cancel()
	_, _, _ = r.casLoop(ctx, in.Req.Resource, nil, true, func(s *Snapshot, now int64) (*Write, error) {
		d := lockstate.DecideCancelWait(recordOf(s), s.Settings, in.Key(), in.DeadlineMs, now, r.lim)
		return r.writeFor(s, d.Record, d.Entries), nil
	})
}
