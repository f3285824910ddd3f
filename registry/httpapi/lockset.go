package httpapi

import (
	"context"
	"net/http"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/wire"
)

// The lock-set calls (issue 46): POST /v1/lockset/acquire, renew and
// release, each one registry call over every member (Registry.AcquireSet,
// RenewSet, ReleaseSet). The caller must be allowed to acquire every
// member; the request log names the members joined by a space, and
// Config.Seen is told each.

// authorizeMembers authorizes caller to acquire every member, and notes
// them in the request record.
func (s *Server) authorizeMembers(ctx context.Context, path, caller string, members []string) error {
	noteMembers(ctx, members)
	for _, m := range members {
		if err := s.authorize(ctx, path, caller, VerbAcquire, m); err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) lockSetAcquire(ctx context.Context, caller string, r *http.Request, body []byte) (any, error) {
	req, err := decode[wire.LockSetRequest](body)
	if err != nil {
		return nil, err
	}
	if err := s.authorizeMembers(ctx, r.URL.Path, caller, req.Members); err != nil {
		return nil, err
	}
	waitMs := min(req.WaitMs, s.cfg.Registry.Config().WaitMsMax)
	ctx, cancel := s.callContext(ctx, waitMs)
	defer cancel()
	if waitMs > 0 {
		s.cfg.Metrics.WaiterAdded()
		defer s.cfg.Metrics.WaiterDone()
	}
	is, err := s.cfg.Registry.AcquireSet(ctx, caller, *req)
	if err != nil {
		return nil, err
	}
	return issuedSetResponse(is)
}

// leaseMembers are the resources a set's renewal or release names.
func leaseMembers(leases []wire.LeaseRequest) []string {
	out := make([]string, len(leases))
	for i, l := range leases {
		out[i] = l.Resource
	}
	return out
}

func (s *Server) lockSetRenew(ctx context.Context, caller string, r *http.Request, body []byte) (any, error) {
	req, err := decode[wire.LockSetLeasesRequest](body)
	if err == nil {
		err = s.authorizeMembers(ctx, r.URL.Path, caller, leaseMembers(req.Leases))
	}
	if err != nil {
		return nil, err
	}
	ctx, cancel := s.callContext(ctx, 0)
	defer cancel()
	is, err := s.cfg.Registry.RenewSet(ctx, caller, req.Leases)
	if err != nil {
		return nil, err
	}
	return issuedSetResponse(is)
}

func (s *Server) lockSetRelease(ctx context.Context, caller string, r *http.Request, body []byte) (any, error) {
	req, err := decode[wire.LockSetLeasesRequest](body)
	if err == nil {
		err = s.authorizeMembers(ctx, r.URL.Path, caller, leaseMembers(req.Leases))
	}
	if err != nil {
		return nil, err
	}
	ctx, cancel := s.callContext(ctx, 0)
	defer cancel()
	if err := s.cfg.Registry.ReleaseSet(ctx, caller, req.Leases); err != nil {
		return nil, err
	}
	out := wire.LockSetReleaseResponse{Members: make([]wire.ReleaseResponse, len(req.Leases))}
	for i, l := range req.Leases {
		out.Members[i] = wire.ReleaseResponse{Resource: l.Resource, Lease: l.Lease, State: grant.StateReleased}
	}
	return out, nil
}

func issuedSetResponse(is wire.IssuedSet) (wire.IssuedSetResponse, error) {
	out := wire.IssuedSetResponse{Members: make([]wire.IssuedResponse, len(is.Members))}
	for i, m := range is.Members {
		r, err := issuedResponse(m)
		if err != nil {
			return wire.IssuedSetResponse{}, err
		}
		out.Members[i] = r
	}
	return out, nil
}
