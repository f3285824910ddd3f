// Package chaosproc is the chaos suite's own processes: a worker that
// writes through the gate under leases from the registry, and a resource
// service that runs the gate on PostgreSQL. Both record every answer they
// see (package record) for the checker. cmd/chaosproc is their binary.
package chaosproc

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/fencegate/fencegate/chaos/record"
	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/wire"
)

// Transport is a client.Transport over several registry replicas that
// records every call's answer. It sends to one replica until a call is
// lost, then to the next: the client's own recovery (the same request ID
// again, a query by request ID) does the rest, as it would behind a load
// balancer.
type Transport struct {
	Replicas []client.Transport
	Rec      *record.Writer
	Proc     string
	Owner    string

	mu      sync.Mutex
	cur     int
	permits map[string]uint64 // request ID → the semaphore acquire's N (queries record it)
}

var (
	_ client.Transport  = (*Transport)(nil)
	_ client.Downgrader = (*Transport)(nil)
)

func (t *Transport) pick() client.Transport {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.Replicas[t.cur%len(t.Replicas)]
}

func (t *Transport) rotate() {
	t.mu.Lock()
	t.cur++
	t.mu.Unlock()
}

// Result classifies a registry call's error as the client does: "ok", a
// definite registry code, "REFUSED" (the transport's own definite no), or
// record.ResultLost.
func Result(err error) string {
	code := wire.CodeOf(err)
	switch {
	case err == nil:
		return record.ResultOK
	case code == "" && errors.Is(err, client.ErrRefused):
		return "REFUSED"
	case code == "" || code == "UNAVAILABLE" || errors.Is(err, client.ErrOutcomeUnknown):
		return record.ResultLost
	}
	return code
}

func (t *Transport) emit(e record.Event, is wire.Issued, err error) {
	e.Proc, e.Owner, e.RetNs, e.Result = t.Proc, t.Owner, record.Now(), Result(err)
	if g := is.Grant; g != nil && err == nil {
		e.Resource, e.Lease, e.RequestID, e.Fence = g.Resource, g.Lease, g.RequestID, g.FenceToken
		e.GrantDigest, e.TTLMs, e.PolicyGen = g.Digest().String(), g.TTLMs, g.PolicyGeneration
		e.GrantIssuedMs, e.GrantExpiresMs = g.IssuedAt.UnixMilli(), g.ExpiresAt.UnixMilli()
		e.Revision = g.BackendRevision
	}
	if st := is.Status; st != nil && err == nil {
		e.Revision = max(e.Revision, st.BackendRevision)
	}
	if st, at, until, ok := is.Statement(); ok && err == nil {
		e.State, e.StatusIssuedMs, e.ValidUntilMs = string(st), at.UnixMilli(), until.UnixMilli()
	}
	t.Rec.Emit(e)
	if e.Result == record.ResultLost {
		t.rotate()
	}
}

// Acquire records the answer to an acquire.
func (t *Transport) Acquire(ctx context.Context, req wire.AcquireRequest) (wire.Issued, error) {
	e := record.Event{Kind: record.KindAcquire, CallNs: record.Now(), Resource: req.Resource, RequestID: req.RequestID, OperationID: req.OperationID, Permits: req.Permits, Mode: req.Mode}
	if req.Permits > 0 {
		t.mu.Lock()
		if t.permits == nil {
			t.permits = map[string]uint64{}
		}
		t.permits[req.RequestID] = req.Permits
		t.mu.Unlock()
	}
	is, err := t.pick().Acquire(ctx, req)
	t.emit(e, is, err)
	return is, err
}

// Renew records the answer to a renewal.
func (t *Transport) Renew(ctx context.Context, resource, lease string) (wire.Issued, error) {
	e := record.Event{Kind: record.KindRenew, CallNs: record.Now(), Resource: resource, Lease: lease}
	is, err := t.pick().Renew(ctx, resource, lease)
	t.emit(e, is, err)
	return is, err
}

// Release records the answer to a release.
func (t *Transport) Release(ctx context.Context, resource, lease string) error {
	e := record.Event{Kind: record.KindRelease, CallNs: record.Now(), Resource: resource, Lease: lease}
	err := t.pick().Release(ctx, resource, lease)
	t.emit(e, wire.Issued{}, err)
	return err
}

// Status records the answer to a status query.
func (t *Transport) Status(ctx context.Context, g *grant.Grant) (wire.Issued, error) {
	e := record.Event{Kind: record.KindStatus, CallNs: record.Now(), Resource: g.Resource, Lease: g.Lease}
	is, err := t.pick().Status(ctx, g)
	t.emit(e, is, err)
	return is, err
}

// QueryRequest records the answer to a query by request ID.
func (t *Transport) QueryRequest(ctx context.Context, requestID string) (wire.Issued, error) {
	t.mu.Lock()
	n := t.permits[requestID]
	t.mu.Unlock()
	e := record.Event{Kind: record.KindQuery, CallNs: record.Now(), RequestID: requestID, Permits: n}
	is, err := t.pick().QueryRequest(ctx, requestID)
	t.emit(e, is, err)
	return is, err
}

// Downgrade records the answer to one send of a downgrade. The replica
// must be a client.Downgrader (*httpclient.Client is); one that is not
// answers REFUSED.
func (t *Transport) Downgrade(ctx context.Context, req wire.DowngradeRequest) (wire.Issued, error) {
	e := record.Event{Kind: record.KindDowngrade, CallNs: record.Now(), Resource: req.Resource, RequestID: req.RequestID, FromLease: req.Lease}
	var (
		is  wire.Issued
		err error
	)
	if d, ok := t.pick().(client.Downgrader); ok {
		is, err = d.Downgrade(ctx, req)
	} else {
		err = fmt.Errorf("chaosproc: replica cannot downgrade: %w", client.ErrRefused)
	}
	t.emit(e, is, err)
	return is, err
}
