package httpapi

import (
	"context"
	"fmt"
	"net/http"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/wire"
)

// decode is DecodeRequest into a fresh T.
func decode[T any](body []byte) (*T, error) {
	v := new(T)
	if err := DecodeRequest(body, v); err != nil {
		return nil, err
	}
	return v, nil
}

func (s *Server) endpoints() []endpoint {
	m := s.cfg.Metrics
	return []endpoint{
		{path: "/v1/acquire", method: http.MethodPost, call: s.acquire, count: m.acquire},
		{path: "/v1/renew", method: http.MethodPost, call: s.renew, count: m.renew},
		{path: "/v1/release", method: http.MethodPost, call: s.release, count: m.release},
		{path: "/v1/downgrade", method: http.MethodPost, call: s.downgrade, count: m.acquire},
		{path: "/v1/status", method: http.MethodPost, call: s.status},
		{path: "/v1/lockset/acquire", method: http.MethodPost, call: s.lockSetAcquire, count: m.acquire, manyResources: true},
		{path: "/v1/lockset/renew", method: http.MethodPost, call: s.lockSetRenew, count: m.renew, manyResources: true},
		{path: "/v1/lockset/release", method: http.MethodPost, call: s.lockSetRelease, count: m.release, manyResources: true},
		{path: "/v1/batch", method: http.MethodPost, call: s.batch, bodyBytesMax: BatchRequestBytesMax, manyResources: true},
		{path: "/v1/requests/{requestId}", method: http.MethodGet, call: s.queryRequest},
		{path: "/v1/admin/revoke-epochs", method: http.MethodPost, admin: true, action: "revoke-epochs", mutates: true, call: s.revokeEpochs},
		{path: "/v1/admin/policy", method: http.MethodPost, admin: true, action: "set-policy-generation", mutates: true, call: s.setPolicy},
		{path: "/v1/admin/floor", method: http.MethodPost, admin: true, action: "raise-floor", mutates: true, call: s.raiseFloor},
		{path: "/v1/admin/resource", method: http.MethodPost, admin: true, action: "read-resource", call: s.resource},
		{path: "/v1/admin/fence-range", method: http.MethodPost, admin: true, action: "bump-fence-range", mutates: true, call: s.bumpFenceRange},
		{path: "/v1/admin/fence-range/current", method: http.MethodGet, admin: true, action: "read-fence-range", call: s.fenceRange},
		{path: "/v1/locks", method: http.MethodGet, call: s.listLocks},
		{path: "/v1/locks/{resource...}", method: http.MethodGet, call: s.lockStatus},
		{path: "/v1/break", method: http.MethodPost, audited: true, action: "break", mutates: true, call: s.breakLock},
	}
}

func (s *Server) acquire(ctx context.Context, caller string, r *http.Request, body []byte) (any, error) {
	req, err := decode[wire.AcquireRequest](body)
	if err != nil {
		return nil, err
	}
	return s.acquireDecoded(ctx, caller, r.URL.Path, req)
}

// acquireDecoded is an acquire after its body decoded: /v1/acquire's and
// a batch's.
func (s *Server) acquireDecoded(ctx context.Context, caller, path string, req *wire.AcquireRequest) (any, error) {
	noteResource(ctx, req.Resource)
	if err := s.authorize(ctx, path, caller, VerbAcquire, req.Resource); err != nil {
		return nil, err
	}
	waitMs := min(req.WaitMs, s.cfg.Registry.Config().WaitMsMax)
	ctx, cancel := s.callContext(ctx, waitMs)
	defer cancel()
	if waitMs > 0 {
		s.cfg.Metrics.WaiterAdded()
		defer s.cfg.Metrics.WaiterDone()
	}
	is, err := s.cfg.Registry.Acquire(ctx, caller, wire.AcquireRequest{
		Resource: req.Resource, OperationID: req.OperationID, OperationClass: req.OperationClass,
		RequestID: req.RequestID, TTLMs: req.TTLMs, WaitMs: req.WaitMs, Permits: req.Permits, Mode: req.Mode,
	})
	if err != nil {
		return nil, err
	}
	noteFence(ctx, is.Grant.FenceToken)
	return issuedResponse(is)
}

func (s *Server) renew(ctx context.Context, caller string, r *http.Request, body []byte) (any, error) {
	req, err := decode[wire.LeaseRequest](body)
	if err == nil {
		noteResource(ctx, req.Resource)
		err = s.authorize(ctx, r.URL.Path, caller, VerbAcquire, wire.RecordName(req.Resource))
	}
	if err != nil {
		return nil, err
	}
	ctx, cancel := s.callContext(ctx, 0)
	defer cancel()
	is, err := s.cfg.Registry.Renew(ctx, caller, req.Resource, req.Lease)
	if err != nil {
		return nil, err
	}
	return issuedResponse(is)
}

func (s *Server) release(ctx context.Context, caller string, r *http.Request, body []byte) (any, error) {
	req, err := decode[wire.LeaseRequest](body)
	if err == nil {
		noteResource(ctx, req.Resource)
		err = s.authorize(ctx, r.URL.Path, caller, VerbAcquire, wire.RecordName(req.Resource))
	}
	if err != nil {
		return nil, err
	}
	ctx, cancel := s.callContext(ctx, 0)
	defer cancel()
	if err := s.cfg.Registry.Release(ctx, caller, req.Resource, req.Lease); err != nil {
		return nil, err
	}
	return wire.ReleaseResponse{Resource: req.Resource, Lease: req.Lease, State: grant.StateReleased}, nil
}

// status is the gate's linearizable status query. An identity that may
// see the grant's resource may ask about any grant of it: a gate is not
// the grant's owner.
func (s *Server) status(ctx context.Context, caller string, r *http.Request, body []byte) (any, error) {
	req, err := decode[wire.StatusRequest](body)
	if err != nil {
		return nil, err
	}
	g, err := grant.ParseGrant([]byte(req.Grant))
	if err != nil {
		return nil, fmt.Errorf("httpapi: status: %w", err)
	}
	noteResource(ctx, g.Resource)
	if err := s.authorize(ctx, r.URL.Path, caller, VerbSee, wire.RecordName(g.Resource)); err != nil {
		return nil, err
	}
	ctx, cancel := s.callContext(ctx, 0)
	defer cancel()
	is, err := s.cfg.Registry.Status(ctx, g)
	if err != nil {
		return nil, err
	}
	return issuedResponse(is)
}

// queryRequest answers only for the caller's own request IDs (request IDs
// are scoped to their owner), and only while the caller may still acquire
// the resource: a policy that took the resource away takes away its
// grants' proofs too.
func (s *Server) queryRequest(ctx context.Context, caller string, r *http.Request, body []byte) (any, error) {
	if len(body) > 0 {
		return nil, fmt.Errorf("%w: GET takes no body", ErrBadRequest)
	}
	ctx, cancel := s.callContext(ctx, 0)
	defer cancel()
	is, err := s.cfg.Registry.QueryRequest(ctx, caller, r.PathValue("requestId"))
	if err == nil {
		noteResource(ctx, is.Grant.Resource)
		err = s.authorize(ctx, r.URL.Path, caller, VerbAcquire, is.Grant.Resource)
	}
	if err != nil {
		return nil, err
	}
	return issuedResponse(is)
}

func (s *Server) revokeEpochs(ctx context.Context, _ string, _ *http.Request, body []byte) (any, error) {
	req, err := decode[wire.RevokeEpochsRequest](body)
	if err == nil {
		err = checkNote(req.Note)
	}
	if err != nil {
		return nil, err
	}
	ctx, cancel := s.callContext(ctx, 0)
	defer cancel()
	noteAdmin(ctx, "", req.Below, req.Note)
	line, err := s.cfg.Registry.RevokeEpochsBelow(ctx, req.Below)
	if err != nil {
		return nil, err
	}
	return wire.RevokeEpochsResponse{RevokedBelowEpoch: line}, nil
}

func (s *Server) setPolicy(ctx context.Context, _ string, _ *http.Request, body []byte) (any, error) {
	req, err := decode[wire.PolicyRequest](body)
	if err == nil {
		err = checkNote(req.Note)
	}
	if err != nil {
		return nil, err
	}
	ctx, cancel := s.callContext(ctx, 0)
	defer cancel()
	noteAdmin(ctx, req.Resource, req.Generation, req.Note)
	ri, err := s.cfg.Registry.SetPolicyGeneration(ctx, req.Resource, req.Generation)
	if err != nil {
		return nil, err
	}
	return ri, nil
}

func (s *Server) raiseFloor(ctx context.Context, _ string, _ *http.Request, body []byte) (any, error) {
	req, err := decode[wire.FloorRequest](body)
	if err == nil {
		err = checkNote(req.Note)
	}
	if err != nil {
		return nil, err
	}
	ctx, cancel := s.callContext(ctx, 0)
	defer cancel()
	noteAdmin(ctx, req.Resource, req.Fence, req.Note)
	ri, err := s.cfg.Registry.RaiseFloor(ctx, req.Resource, req.Fence)
	if err != nil {
		return nil, err
	}
	return ri, nil
}

func (s *Server) resource(ctx context.Context, _ string, _ *http.Request, body []byte) (any, error) {
	req, err := decode[wire.ResourceRequest](body)
	if err != nil {
		return nil, err
	}
	noteAdmin(ctx, req.Resource, 0, "")
	ctx, cancel := s.callContext(ctx, 0)
	defer cancel()
	ri, err := s.cfg.Registry.Resource(ctx, req.Resource)
	if err != nil {
		return nil, err
	}
	return ri, nil
}

// bumpFenceRange moves the fence range (Registry.BumpFenceRange). Its
// audit line's value is the generation the bump set (the above asked
// for, when refused).
func (s *Server) bumpFenceRange(ctx context.Context, _ string, _ *http.Request, body []byte) (any, error) {
	req, err := decode[wire.FenceRangeBumpRequest](body)
	if err == nil {
		err = checkNote(req.Note)
	}
	if err != nil {
		return nil, err
	}
	noteAdmin(ctx, "", req.Above, req.Note)
	// The bump may wait for the clock to pass its generation's second
	// and the skew bound: give it that on top of the call's time.
	ctx, cancel := s.callContext(ctx, bumpWaitMs+s.cfg.Registry.Config().ClockSkewMaxMs)
	defer cancel()
	fr, err := s.cfg.Registry.BumpFenceRange(ctx, req.Above)
	if err != nil {
		return nil, err
	}
	noteAdmin(ctx, "", fr.Generation, req.Note)
	return fr, nil
}

// bumpWaitMs is the time a bump's call gets beyond CallTimeoutMs and the
// skew bound, 2 s: a bump waits up to a second and the skew bound for
// the clock to pass its generation.
const bumpWaitMs = 2000

func (s *Server) fenceRange(ctx context.Context, _ string, _ *http.Request, body []byte) (any, error) {
	if len(body) > 0 {
		return nil, fmt.Errorf("%w: GET takes no body", ErrBadRequest)
	}
	ctx, cancel := s.callContext(ctx, 0)
	defer cancel()
	return s.cfg.Registry.FenceRange(ctx)
}
