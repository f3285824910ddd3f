package registry

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fencegate/fencegate/grant"
)

// cancelWaitTimeoutMs bounds the best-effort withdrawal of a waiter's
// ticket after its caller gave up; a ticket that cannot be withdrawn
// lapses at its deadline anyway.
const cancelWaitTimeoutMs = 2000

// Acquire grants owner the lease on req.Resource with the next fence token,
// or returns the grant already issued under (owner, req.RequestID) with its
// current state (HELD, or its final state): never a second grant. With
// WaitMs > 0 it queues FIFO behind earlier waiters until the lease is free
// and it is at the head, the wait ends (ErrWaitTimeout) or ctx ends (the
// ticket is withdrawn). Wakeups come from store watches, with bounded
// polling for what no write announces (an expiry, a vanished head waiter).
func (r *Registry) Acquire(ctx context.Context, owner string, req AcquireRequest) (Issued, error) {
	ttl, err := validateAcquire(owner, req, r.cfg)
	if err != nil {
		return Issued{}, err
	}
	in := acquireInput{owner: owner, req: req, ttlMs: ttl, wait: req.WaitMs > 0}
	if in.wait {
		in.deadlineMs = r.now() + int64(min(req.WaitMs, r.cfg.WaitMsMax))
	}
	var (
		events <-chan RecordEvent
		queued bool
		cached = true
	)
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	for {
		dec, s, rev, now, err := r.acquireStep(ctx, in, cached, queued)
		if errors.Is(err, ErrConflict) && queued && ctx.Err() == nil {
			cached = false // contention while queued: keep our place, look again
			continue
		}
		if err != nil {
			if queued {
				r.cancelWait(ctx, in)
			}
			return Issued{}, err
		}
		switch dec.outcome {
		case outPurge, outHanded:
			cached = false
			continue
		case outGranted:
			return r.issue(dec.body, rev, grant.StateHeld, now+int64(in.ttlMs), rev, now, s.Settings)
		case outExisting:
			return r.existing(&s, in.key(), now)
		}
		queued = true
		if events == nil {
			from := max(rev, s.Revision) + 1
			if events, err = r.store.Watch(wctx, req.Resource, from); err != nil {
				events = nil // poll instead
			}
		}
		if cached, err = r.sleep(ctx, in, &events); err != nil {
			r.cancelWait(ctx, in)
			return Issued{}, fmt.Errorf("registry: acquire %s: waiting: %w", req.Resource, err)
		}
	}
}

// acquireStep runs one acquire decision to its commit.
func (r *Registry) acquireStep(ctx context.Context, in acquireInput, cached, queued bool) (acquireDecision, Snapshot, uint64, int64, error) {
	var (
		dec acquireDecision
		at  int64
	)
	key := in.key()
	s, rev, err := r.casLoopMode(ctx, in.req.Resource, []RequestKey{key}, cached, queued, func(s *Snapshot, now int64) (*Write, error) {
		var err error
		at = now
		slot := s.Slot(key)
		dec, err = decideAcquire(recordOf(s), slot.Entry, s.Settings, in, now, r.cfg)
		if err != nil {
			return nil, err
		}
		if dec.outcome == outPurge {
			return &Write{SettingsRev: s.SettingsRev, Requests: []RequestWrite{{Key: key, Compare: true, ModRev: slot.ModRev}}}, nil
		}
		return writeFor(s, dec.record, dec.entries), nil
	})
	return dec, s, rev, at, err
}

// existing answers a retried acquire from the request's entry.
func (r *Registry) existing(s *Snapshot, key RequestKey, now int64) (Issued, error) {
	slot := s.Slot(key)
	if slot.Entry == nil {
		return Issued{}, fmt.Errorf("%w: request %s vanished", ErrNotFound, key.RequestID)
	}
	rec := recordOf(s)
	state := entryState(rec, slot.Entry, s.Settings, now)
	var expires int64
	if state == grant.StateHeld {
		expires = rec.Holder.ExpiresAtMs
	}
	return r.issue(slot.Entry.Grant, slot.CreateRev, state, expires, s.Revision, now, s.Settings)
}

// sleep waits for the next store event or the next instant worth a fresh
// look. It reports whether the next decision may use the cache (a watch
// delivered the record) or must read.
func (r *Registry) sleep(ctx context.Context, in acquireInput, events *<-chan RecordEvent) (bool, error) {
	now := r.now()
	wake := r.nextWake(in, now)
	t := time.NewTimer(time.Duration(wake-now) * time.Millisecond)
	defer t.Stop()
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
			r.rememberRecord(in.req.Resource, ev.Record, ev.ModRev)
			return true, nil
		case <-t.C:
			return false, nil
		}
	}
}

// nextWake is the earliest instant at which the cached record could change
// without a write: its holder expiring, lock-delay ending, the head
// waiter's claim window closing, or the wait's deadline; at most
// WaitPollMsMax away, at least a millisecond.
func (r *Registry) nextWake(in acquireInput, now int64) int64 {
	wake := min(now+int64(r.cfg.WaitPollMsMax), in.deadlineMs)
	r.mu.Lock()
	c, ok := r.cache[in.req.Resource]
	r.mu.Unlock()
	if ok && c.record != nil {
		rec := c.record
		for _, t := range []int64{
			holderExpiry(rec), holderExpiry(rec) + int64(r.cfg.LockDelayMs),
			rec.FreeAtMs, rec.FreeAtMs + int64(r.cfg.HandoffClaimMs),
		} {
			if t > now {
				wake = min(wake, t)
			}
		}
	}
	return max(wake, now+1)
}

func holderExpiry(rec *Record) int64 {
	if rec.Holder == nil {
		return -1 << 40 // far in the past: never a wake candidate
	}
	return rec.Holder.ExpiresAtMs
}

// cancelWait withdraws the caller's ticket, best effort, even though ctx
// may be over: a ticket left behind only lapses at its deadline.
func (r *Registry) cancelWait(ctx context.Context, in acquireInput) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelWaitTimeoutMs*time.Millisecond)
	defer cancel()
	_, _, _ = r.casLoop(ctx, in.req.Resource, nil, true, func(s *Snapshot, now int64) (*Write, error) {
		d := decideCancelWait(recordOf(s), s.Settings, in.key(), now, r.cfg, s.taken)
		return writeFor(s, d.record, d.entries), nil
	})
}
