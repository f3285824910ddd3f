package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/wire"
)

// The lock views: any identity the resource policy lets see a resource
// may read its lock (who holds it, since when, who waits), list locks
// under a prefix (only the ones it may see are listed), and wait for a
// lock to change; an admin, or an identity the policy lets break a
// resource, may break its lock. api/openapi.yaml describes the same.

// queryOnly returns r's query, refusing any parameter not in allowed
// and any given twice.
func queryOnly(r *http.Request, allowed ...string) (url.Values, error) {
	q := r.URL.Query()
	for k, v := range q {
		known := false
		for _, a := range allowed {
			known = known || k == a
		}
		switch {
		case !known:
			return nil, fmt.Errorf("%w: query parameter %q (want %v)", ErrBadRequest, k, allowed)
		case len(v) != 1:
			return nil, fmt.Errorf("%w: query parameter %q given %d times", ErrBadRequest, k, len(v))
		}
	}
	return q, nil
}

// uintParam parses q[name], "" as 0.
func uintParam(q url.Values, name string) (uint64, error) {
	v := q.Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %s=%q: want a whole number", ErrBadRequest, name, v)
	}
	return n, nil
}

// lockStatus is GET /v1/locks/{resource}; with waitMs, a long poll that
// answers once the lock differs from what the caller saw at
// afterRevision (or the wait ends).
func (s *Server) lockStatus(ctx context.Context, caller string, r *http.Request, body []byte) (any, error) {
	q, err := queryOnly(r, "waitMs", "afterRevision")
	if err != nil {
		return nil, err
	}
	waitMs, err := uintParam(q, "waitMs")
	if err != nil {
		return nil, err
	}
	after, err := uintParam(q, "afterRevision")
	if err != nil {
		return nil, err
	}
	resource := r.PathValue("resource")
	noteResource(ctx, resource)
	if err := s.authorize(ctx, r.URL.Path, caller, VerbSee, resource); err != nil {
		return nil, err
	}
	waitMs = min(waitMs, registry.WatchWaitMsMax)
	ctx, cancel := s.callContext(ctx, waitMs)
	defer cancel()
	if waitMs > 0 {
		return s.cfg.Registry.WatchLock(ctx, resource, after, time.Duration(waitMs)*time.Millisecond)
	}
	return s.cfg.Registry.LockStatus(ctx, resource)
}

// listLocks is GET /v1/locks?prefix=&after=&limit=&form=: a LockList,
// or with form=rows the same page as wire.LockRows.
func (s *Server) listLocks(ctx context.Context, caller string, r *http.Request, body []byte) (any, error) {
	q, err := queryOnly(r, "prefix", "after", "limit", "form")
	if err != nil {
		return nil, err
	}
	if f := q.Get("form"); f != "" && f != wire.ListFormRows {
		return nil, fmt.Errorf("%w: form=%q: want %q or none", ErrBadRequest, f, wire.ListFormRows)
	}
	limit, err := uintParam(q, "limit")
	if err != nil {
		return nil, err
	}
	ctx, cancel := s.callContext(ctx, 0)
	defer cancel()
	see := func(resource string) bool { return s.cfg.Authorizer.Authorize(caller, VerbSee, resource) == nil }
	l, err := s.cfg.Registry.ListLocks(ctx, q.Get("prefix"), q.Get("after"), int(min(limit, 1<<20)), see)
	if err != nil || q.Get("form") == "" {
		return l, err
	}
	return wire.RowsOf(l), nil
}

// breakLock is POST /v1/break: an admin, or an identity the policy lets
// break the resource, ends its lease now. Audited either way. A lock
// set's member's break ends the whole set, so an identity that is not an
// admin needs the right on every member: a policy grants break per
// resource (a team's prefix), and a right on one member must not end a
// lease on a resource the policy keeps from the caller.
func (s *Server) breakLock(ctx context.Context, caller string, r *http.Request, body []byte) (any, error) {
	req, err := decode[wire.BreakRequest](body)
	if err == nil {
		err = checkNote(req.Note)
	}
	if err != nil {
		return nil, err
	}
	noteAdmin(ctx, req.Resource, 0, req.Note)
	var allow func(context.Context, []string) error
	if !s.cfg.Admins.Has(caller) {
		// Readers (NAME/_read) are broken with NAME's rights, as they are
		// acquired; a slot with its semaphore's (authorize).
		if err := s.authorize(ctx, r.URL.Path, caller, VerbBreak, wire.RecordName(req.Resource)); err != nil {
			return nil, err
		}
		allow = func(ctx context.Context, others []string) error {
			for _, m := range others {
				if err := s.authorize(ctx, r.URL.Path, caller, VerbBreak, m); err != nil {
					return fmt.Errorf("%s is a lock set's member, and breaking it ends the whole set: %w", req.Resource, err)
				}
			}
			return nil
		}
	}
	ctx, cancel := s.callContext(ctx, 0)
	defer cancel()
	return s.cfg.Registry.BreakAllowed(ctx, req.Resource, allow)
}
