package client

import (
	"fmt"
	"sync"
	"time"

	"github.com/fencegate/fencegate/client/core"
	"github.com/fencegate/fencegate/wire"
)

// Session is one workload identity's client: it acquires leases through
// its Transport and guarantees that, per resource, it never runs two
// identities at once — at most one live lease, and at most one request ID
// without a final answer. Safe for concurrent use.
type Session struct {
	t Transport
	o Options

	mu      sync.Mutex
	pending map[string]*attempt // resource → acquire without a final answer
	live    map[string]*Lease   // resource → lease not yet EXPIRED or RELEASED
}

// attempt is an acquire whose request ID is kept until a final answer:
// its parameters and its core (AcquireCore), used under the session's
// lock.
type attempt struct {
	req    wire.AcquireRequest // as first asked (the core may change the request ID)
	active bool                // an Acquire call is working on it
	core   *core.Acquire
}

// NewSession returns a session over t. opts' zero fields take their
// defaults (see Options).
func NewSession(t Transport, opts Options) *Session {
	return &Session{t: t, o: opts.WithDefaults(), pending: make(map[string]*attempt), live: make(map[string]*Lease)}
}

// Options returns the options in force, defaults filled.
func (s *Session) Options() Options { return s.o }

// Transport returns the session's transport.
func (s *Session) Transport() Transport { return s.t }

// AcquireRequest asks for a lease. TTL 0 takes Options.TTLDefault; the
// client always names the TTL, so an acquire whose answer was lost is
// waited out for exactly that long.
type AcquireRequest struct {
	Resource       string
	OperationID    string // the grant binds OperationRoot(Resource, OperationID)
	OperationClass string
	TTL            time.Duration // server-side TTL; 0 = Options.TTLDefault
	Wait           time.Duration // queue at most this long behind other holders; 0 = fail at once (BUSY)
}

func (r AcquireRequest) wire(requestID string) wire.AcquireRequest {
	return wire.AcquireRequest{
		Resource: r.Resource, OperationID: r.OperationID, OperationClass: r.OperationClass,
		RequestID: requestID, TTLMs: uint64(r.TTL / time.Millisecond), WaitMs: uint64(r.Wait / time.Millisecond),
	}
}

// sameParams reports whether two wire requests differ only in request ID.
func sameParams(a, b wire.AcquireRequest) bool {
	a.RequestID, b.RequestID = "", ""
	return a == b
}

// float64 draws from the session's seeded rand.
func (s *Session) float64() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.o.Rand.Float64()
}

// newRequestIDLocked draws a request ID from the seeded rand.
func (s *Session) newRequestIDLocked() string {
	return fmt.Sprintf("req-%016x%016x", s.o.Rand.Uint64(), s.o.Rand.Uint64())
}

// ended forgets a lease once it is EXPIRED or RELEASED.
func (s *Session) ended(l *Lease) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := l.Grant().Resource; s.live[r] == l {
		delete(s.live, r)
	}
}

// Pending returns the request ID of the resource's acquire that has no
// final answer yet, if any.
func (s *Session) Pending(resource string) (requestID string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.pending[resource]; a != nil {
		return a.core.Request().RequestID, true
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
