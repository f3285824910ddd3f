// Package batch coalesces concurrent calls into groups, sent while
// earlier groups are in flight: the mechanism the SDK's HTTP client
// (POST /v1/batch) and the etcd store (one transaction of many commits)
// share. A call that finds fewer than InflightMax groups in flight goes at
// once, first in its group: an idle caller pays nothing. Calls that
// arrive while InflightMax groups are in flight queue; the first slot to
// free sends the queue, as much of it as one group takes, and keeps
// sending while calls wait. What a group is, how it is sent and how each
// call learns its outcome are the user's (Queue.Group, Queue.Send).
package batch

import (
	"context"
	"sync"
	"sync/atomic"
)

// Queue queues calls of type T (a pointer, one per call) and sends them
// in groups. Set the fields before the first Do; do not copy a Queue
// after.
type Queue[T comparable] struct {
	// InflightMax is how many groups are in flight before calls queue
	// (at least 1).
	InflightMax int
	// Group returns, for one group being formed, whether the next call
	// joins it: it is asked for each queued call in order (after the call
	// that found the free slot, which always joins), and a call it
	// refuses stays queued, in order, for a later group. Nil: every call,
	// in order.
	Group func() func(T) bool
	// Send sends one group and delivers every call's outcome, so that
	// each call's Do returns (it closes the channel each Do waits on).
	Send func(group []T)
	// Ready reports whether a call may be sent now. A call not ready is
	// queued even when a slot is free, and no group takes it until it
	// is; whatever makes it ready calls Kick unless a group in flight
	// ends after (its slot takes the queue). Nil: every call is ready.
	Ready func(T) bool

	mu       sync.Mutex
	queue    []T
	inflight int // groups in flight, <= InflightMax
}

// Do runs call: when a slot is free it is sent at once, first in its
// group — alone, on this goroutine; with queued calls, by a goroutine of
// its own — else it is queued for the next group. Do then waits until
// done is closed (Send delivered the outcome: nil) or ctx ends: then the
// call is withdrawn if it was still queued (sent false: nothing was sent),
// or its outcome is unknown (sent true: it may have been applied), and
// Do returns ctx's error.
func (q *Queue[T]) Do(ctx context.Context, call T, done <-chan struct{}) (sent bool, err error) {
	q.mu.Lock()
	if q.inflight < q.InflightMax && (q.Ready == nil || q.Ready(call)) {
		q.inflight++
		group := q.takeLocked(call, true)
		q.mu.Unlock()
		if len(group) == 1 {
			q.Send(group)
			q.handOff()
			return true, nil
		}
		go func() {
			q.Send(group)
			q.handOff()
		}()
	} else {
		q.queue = append(q.queue, call)
		q.mu.Unlock()
	}
	select {
	case <-done:
		return true, nil
	case <-ctx.Done():
		return !q.withdraw(call), ctx.Err()
	}
}

// Queued is how many calls wait for a group.
func (q *Queue[T]) Queued() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.queue)
}

// takeLocked returns first (when withFirst) and then the queued calls
// Group admits, in order; the rest stay queued.
func (q *Queue[T]) takeLocked(first T, withFirst bool) []T {
	admit := func(T) bool { return true }
	if q.Group != nil {
		admit = q.Group()
	}
	var group []T
	if withFirst {
		admit(first)
		group = append(group, first)
	}
	rest := q.queue[:0]
	for _, c := range q.queue {
		if (q.Ready == nil || q.Ready(c)) && admit(c) {
			group = append(group, c)
		} else {
			rest = append(rest, c)
		}
	}
	clear(q.queue[len(rest):])
	q.queue = rest
	return group
}

// handOff gives a finished group's slot to the queue: a goroutine keeps
// sending while calls wait, and frees the slot when none do.
func (q *Queue[T]) handOff() {
	q.mu.Lock()
	var none T
	group := q.takeLocked(none, false)
	if len(group) == 0 {
		q.inflight--
		q.mu.Unlock()
		return
	}
	q.mu.Unlock()
	go func() {
		q.Send(group)
		q.handOff()
	}()
}

// Kick sends the queued calls that are ready when a slot is free: a
// call that became ready while no group was in flight would otherwise
// wait for the next call to arrive (Ready).
func (q *Queue[T]) Kick() {
	q.mu.Lock()
	if q.inflight >= q.InflightMax {
		q.mu.Unlock()
		return
	}
	var none T
	group := q.takeLocked(none, false)
	if len(group) == 0 {
		q.mu.Unlock()
		return
	}
	q.inflight++
	q.mu.Unlock()
	go func() {
		q.Send(group)
		q.handOff()
	}()
}

// withdraw removes call from the queue; false when it was already sent.
func (q *Queue[T]) withdraw(call T) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, c := range q.queue {
		if c == call {
			q.queue = append(q.queue[:i], q.queue[i+1:]...)
			return true
		}
	}
	return false
}

// Context is a group's context: first's values (the first call's trace
// context), cancelled once every one of ctxs has ended, so a group lives
// while any of its callers still waits for it and one caller giving up
// never cancels the others' calls. Call stop when the group is done.
func Context(first context.Context, ctxs []context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(first))
	var left atomic.Int64
	left.Store(int64(len(ctxs)))
	stops := make([]func() bool, len(ctxs))
	for i, c := range ctxs {
		stops[i] = context.AfterFunc(c, func() {
			if left.Add(-1) == 0 {
				cancel()
			}
		})
	}
	return ctx, func() {
		for _, s := range stops {
			s()
		}
		cancel()
	}
}
