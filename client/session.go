package client

import (
	"fmt"
	mrand "math/rand/v2"
	"sync"

	"github.com/fencegate/fencegate/client/core"
	"github.com/fencegate/fencegate/wire"
)

// Session is one workload identity's client: it acquires leases through
// its Transport and guarantees that, per resource, it never runs two
// identities at once — at most one live lease, and at most one request ID
// without a final answer. Safe for concurrent use.
type Session struct {
	t   Transport
	o   Options
	rnd *draws // the cores' numbers: backoff and renewal jitter, request IDs

	mu      sync.Mutex
	pending map[string]*attempt // resource → acquire without a final answer
	live    map[string]*Lease   // resource → lease not yet EXPIRED or RELEASED
}

// attempt is an acquire whose request ID is kept until a final answer:
// its parameters and its core, used under the session's lock.
type attempt struct {
	req    wire.AcquireRequest // as first asked (the core may change the request ID); a set's names it by core.SetName
	set    []string            // a lock set's members, sorted; nil for a plain acquire
	active bool                // an Acquire call is working on it
	core   *core.Acquire
}

// NewSession returns a session over t. opts' zero fields take their
// defaults (see Options).
func NewSession(t Transport, opts Options) *Session {
	o := opts.WithDefaults()
	return &Session{t: t, o: o, rnd: &draws{r: o.Rand}, pending: make(map[string]*attempt), live: make(map[string]*Lease)}
}

// Options returns the options in force, defaults filled.
func (s *Session) Options() Options { return s.o }

// Transport returns the session's transport.
func (s *Session) Transport() Transport { return s.t }

// OperationClassDefault is an acquire's operation class when the request
// names none. Gates allow every class unless their Policy lists some.
const OperationClassDefault = "default"

// sameParams reports whether two wire requests differ only in request ID.
func sameParams(a, b wire.AcquireRequest) bool {
	a.RequestID, b.RequestID = "", ""
	return a == b
}

// draws is the session's seeded rand (Options.Rand) behind a lock of its
// own, a leaf: the cores draw from it (a number source, never the shell)
// and so does the session, whatever locks they hold.
type draws struct {
	mu sync.Mutex
	r  *mrand.Rand
}

// float64 draws in [0, 1).
func (d *draws) float64() float64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.r.Float64()
}

// requestID draws a request ID.
func (d *draws) requestID() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return fmt.Sprintf("req-%016x%016x", d.r.Uint64(), d.r.Uint64())
}

// ended forgets a lease once it is EXPIRED or RELEASED.
func (s *Session) ended(l *Lease) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := l.Grant().Resource; s.live[r] == l {
		delete(s.live, r)
	}
	// A semaphore's permit is kept under the semaphore's name, the
	// resource its acquire named; its grant names the slot.
	if name, _, ok := wire.SlotOf(l.Grant().Resource); ok && s.live[name] == l {
		delete(s.live, name)
	}
	// So is a read/write lock's reader's lease, whose grant names
	// NAME/_read.
	if name, ok := wire.ReadOf(l.Grant().Resource); ok && s.live[name] == l {
		delete(s.live, name)
	}
}

// Pending returns the request ID of the resource's acquire that has no
// final answer yet, if any.
func (s *Session) Pending(resource string) (requestID string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.pending[resource]; a != nil {
		return a.core.View().Request.RequestID, true
	}
	return "", false
}

// Lease returns the resource's live lease, if any.
func (s *Session) Lease(resource string) (*Lease, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.live[resource]
	return l, ok
}
