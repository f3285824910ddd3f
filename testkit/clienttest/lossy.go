package clienttest

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/wire"
)

// Fault is what the lossy network does to one call.
type Fault int

// Faults.
const (
	Pass         Fault = iota // deliver the request and the answer
	DropRequest               // the registry never sees the request
	DropResponse              // the registry applies it; the answer is lost
)

// Call is one call the lossy transport saw.
type Call struct {
	Op        string // Acquire, Renew, Release, Status, QueryRequest
	Key       string // request ID (Acquire, QueryRequest) or lease ID
	Fault     Fault
	InFlight  int // acquire request IDs in flight, this one included
	Different int // distinct acquire request IDs in flight at once
}

// Lossy wraps a Transport and loses requests or answers as Faults says.
// Both kinds of loss return an error wrapping client.ErrOutcomeUnknown:
// the client cannot tell them apart, as on a real network.
type Lossy struct {
	Inner client.Transport
	// Fault decides each call's fate; nil means Pass. Set it before the
	// transport is in use, or with SetFault while calls may be running.
	Fault func(op, key string) Fault
	// After, if set, runs once each call is over, before its answer is
	// returned (a test's hook to end a caller's context after one try).
	After func(op string)

	mu       sync.Mutex
	calls    []Call
	inFlight map[string]int // acquire request ID → calls in flight
}

// Calls returns every call so far.
func (l *Lossy) Calls() []Call {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Call(nil), l.calls...)
}

// MaxDifferentInFlight is the most distinct acquire request IDs ever in
// flight at once: the client's "never two identities" says at most 1.
func (l *Lossy) MaxDifferentInFlight() int {
	max := 0
	for _, c := range l.Calls() {
		if c.Different > max {
			max = c.Different
		}
	}
	return max
}

// SetFault replaces Fault while calls may be running (a lease's
// background loop renewing, say).
func (l *Lossy) SetFault(f func(op, key string) Fault) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.Fault = f
}

func (l *Lossy) begin(op, key string) (Fault, func()) {
	l.mu.Lock()
	fault := l.Fault
	l.mu.Unlock()
	f := Pass
	if fault != nil {
		f = fault(op, key)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inFlight == nil {
		l.inFlight = make(map[string]int)
	}
	c := Call{Op: op, Key: key, Fault: f}
	if op == "Acquire" {
		l.inFlight[key]++
		c.InFlight, c.Different = 0, len(l.inFlight)
		for _, n := range l.inFlight {
			c.InFlight += n
		}
	}
	l.calls = append(l.calls, c)
	return f, func() {
		if op != "Acquire" {
			return
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.inFlight[key]--; l.inFlight[key] == 0 {
			delete(l.inFlight, key)
		}
	}
}

func lost(op string, f Fault) error {
	return fmt.Errorf("clienttest: %s: %w (fault %d)", op, client.ErrOutcomeUnknown, f)
}

func run[T any](l *Lossy, op, key string, fn func() (T, error)) (T, error) {
	f, end := l.begin(op, key)
	defer end()
	if l.After != nil {
		defer l.After(op)
	}
	var zero T
	if f == DropRequest {
		return zero, lost(op, f)
	}
	v, err := fn()
	if f == DropResponse {
		return zero, lost(op, f)
	}
	return v, err
}

// Acquire forwards or loses the call.
func (l *Lossy) Acquire(ctx context.Context, req wire.AcquireRequest) (wire.Issued, error) {
	return run(l, "Acquire", req.RequestID, func() (wire.Issued, error) { return l.Inner.Acquire(ctx, req) })
}

// Renew forwards or loses the call.
func (l *Lossy) Renew(ctx context.Context, resource, lease string) (wire.Issued, error) {
	return run(l, "Renew", lease, func() (wire.Issued, error) { return l.Inner.Renew(ctx, resource, lease) })
}

// Release forwards or loses the call.
func (l *Lossy) Release(ctx context.Context, resource, lease string) error {
	_, err := run(l, "Release", lease, func() (struct{}, error) { return struct{}{}, l.Inner.Release(ctx, resource, lease) })
	return err
}

// Status forwards or loses the call.
func (l *Lossy) Status(ctx context.Context, g *grant.Grant) (wire.Issued, error) {
	return run(l, "Status", g.Lease, func() (wire.Issued, error) { return l.Inner.Status(ctx, g) })
}

// QueryRequest forwards or loses the call.
func (l *Lossy) QueryRequest(ctx context.Context, requestID string) (wire.Issued, error) {
	return run(l, "QueryRequest", requestID, func() (wire.Issued, error) { return l.Inner.QueryRequest(ctx, requestID) })
}

// RequestIDs lists the acquire request IDs used, in order of first use
// (Acquire and QueryRequest calls).
func (l *Lossy) RequestIDs() []string {
	var ids []string
	for _, c := range l.Calls() {
		if (c.Op == "Acquire" || c.Op == "QueryRequest") && !slices.Contains(ids, c.Key) {
			ids = append(ids, c.Key)
		}
	}
	return ids
}
