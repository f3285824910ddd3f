// Tests that the registry reports each expiry and handoff it commits to its
// Observer, once, with the handoff measured from the instant the resource
// became free.
package registry_test

import (
	"sync"
	"testing"
	"time"

	"github.com/fencegate/fencegate/registry"
)

type recorder struct {
	mu       sync.Mutex
	expired  int
	handoffs []time.Duration
}

func (r *recorder) Expired() { r.mu.Lock(); r.expired++; r.mu.Unlock() }
func (r *recorder) Handoff(d time.Duration) {
	r.mu.Lock()
	r.handoffs = append(r.handoffs, d)
	r.mu.Unlock()
}

func TestObserverExpiryAndHandoff(t *testing.T) {
	rec := &recorder{}
	e := newEnv(t, func(c *registry.Config) { c.Observer = rec })
	a := e.mustAcquire("worker-a", req("inv/1", "a-1"))
	if rec.expired != 0 || len(rec.handoffs) != 0 {
		t.Fatalf("first grant reported expired %d handoffs %v", rec.expired, rec.handoffs)
	}
	// A's lease runs out; lock-delay follows; B acquires 250 ms after the
	// resource became free.
	lockDelay := time.Duration(e.reg.Config().LockDelayMs) * time.Millisecond
	e.clock.Advance(time.Duration(a.Grant.TTLMs)*time.Millisecond + lockDelay + 250*time.Millisecond)
	e.mustAcquire("worker-b", req("inv/1", "b-1"))
	if rec.expired != 1 || len(rec.handoffs) != 1 || rec.handoffs[0] != 250*time.Millisecond {
		t.Fatalf("after expiry and re-grant: expired %d, handoffs %v (want 1, [250ms])", rec.expired, rec.handoffs)
	}
	// A retried acquire answers from the request index: no new event.
	e.mustAcquire("worker-b", req("inv/1", "b-1"))
	if rec.expired != 1 || len(rec.handoffs) != 1 {
		t.Fatalf("a retry reported events: expired %d, handoffs %v", rec.expired, rec.handoffs)
	}
}

// A lock set's grant reports, member by member, the expiry it ended and
// the handoff of the member that had been held before.
func TestObserverLockSet(t *testing.T) {
	rec := &recorder{}
	e := newEnv(t, func(c *registry.Config) { c.Observer = rec })
	b := e.mustAcquire("worker-a", req("inv/b", "a-1"))
	lockDelay := time.Duration(e.reg.Config().LockDelayMs) * time.Millisecond
	e.clock.Advance(time.Duration(b.Grant.TTLMs)*time.Millisecond + lockDelay + 250*time.Millisecond)
	if _, err := e.reg.AcquireSet(e.ctx, "worker-b", setReq("s-1", 0, "inv/a", "inv/b")); err != nil {
		t.Fatal(err)
	}
	if rec.expired != 1 || len(rec.handoffs) != 1 || rec.handoffs[0] != 250*time.Millisecond {
		t.Fatalf("after b's expiry and the set's grant: expired %d, handoffs %v (want 1, [250ms])", rec.expired, rec.handoffs)
	}
}

// A reader whose lease runs out is reported expired, once, by the commit
// that ends it (here the next reader's grant).
func TestObserverReaderExpiry(t *testing.T) {
	rec := &recorder{}
	e := newEnv(t, func(c *registry.Config) { c.Observer = rec })
	a := e.mustAcquire("worker-a", rwReq("a-1", true, 0))
	lockDelay := time.Duration(e.reg.Config().LockDelayMs) * time.Millisecond
	e.clock.Advance(time.Duration(a.Grant.TTLMs)*time.Millisecond + lockDelay)
	e.mustAcquire("worker-b", rwReq("b-1", true, 0))
	if rec.expired != 1 {
		t.Fatalf("a reader's expiry reported %d times, want 1", rec.expired)
	}
}
