// Package httpclient is the production client.Transport: it carries the
// client's calls over the registry's HTTP API (registry/httpclient.Client)
// and maps every answer onto the client's contract — registry codes back
// to the registry's sentinels, transport refusals to client.ErrRefused,
// and everything that may or may not have been applied (a timeout, a
// reset connection, a 5xx without a definite code, an unparsable answer)
// to an error the client treats as lost.
package httpclient

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/wire"
)

// Transport is a client.Transport over a Client. The caller's identity is
// the client's credentials (client certificate or bearer token). Registry
// codes come back as the registry's sentinels (wire.ErrBusy, …); every
// other failure is classified for the client: refused, or outcome unknown.
type Transport struct {
	C *Client
}

var _ client.Transport = Transport{}

func (t Transport) api() remote { return remote{Client: t.C} }

// Acquire calls POST /v1/acquire.
func (t Transport) Acquire(ctx context.Context, req wire.AcquireRequest) (wire.Issued, error) {
	is, err := t.api().Acquire(ctx, req)
	return is, mapErr(err)
}

// Renew calls POST /v1/renew.
func (t Transport) Renew(ctx context.Context, resource, lease string) (wire.Issued, error) {
	is, err := t.api().Renew(ctx, resource, lease)
	return is, mapErr(err)
}

// Release calls POST /v1/release.
func (t Transport) Release(ctx context.Context, resource, lease string) error {
	return mapErr(t.api().Release(ctx, resource, lease))
}

// Status calls POST /v1/status with the grant's canonical text.
func (t Transport) Status(ctx context.Context, g *grant.Grant) (wire.Issued, error) {
	is, err := t.api().Status(ctx, g)
	return is, mapErr(err)
}

// QueryRequest calls GET /v1/requests/{requestId}.
func (t Transport) QueryRequest(ctx context.Context, requestID string) (wire.Issued, error) {
	is, err := t.api().QueryRequest(ctx, requestID)
	return is, mapErr(err)
}

// refusedCodes are the HTTP layer's definite refusals: the registry never
// acted on the request. A refusal by the resource policy is one too: an
// acquire ends, and a renewal the policy no longer allows ends the lease
// for the client (it stops its effects; the registry's lease runs out).
var refusedCodes = map[string]bool{
	wire.CodeBadRequest: true, wire.CodeTooLarge: true, wire.CodeUnauthenticated: true,
	wire.CodeForbidden: true, wire.CodeMethodNotAllowed: true, "MALFORMED": true,
	wire.CodeForbiddenResource: true, wire.CodeUnsupportedMediaType: true,
}

// mapErr turns an httpclient.Transport error into the client's contract: a
// registry answer (it carries a registry code, UNAVAILABLE included, which
// the client classifies as lost itself) stays as it is; a refusal by the
// HTTP layer wraps client.ErrRefused; anything else (INTERNAL, NOT_READY,
// TIMEOUT, CANCELED, network errors, a bad response) wraps
// client.ErrOutcomeUnknown.
func mapErr(err error) error {
	var api *APIError
	switch {
	case err == nil:
		return nil
	case wire.CodeOf(err) != "":
		return fmt.Errorf("httpclient: %w", err)
	case errors.As(err, &api) && refusedCodes[api.Code]:
		return &layered{class: client.ErrRefused, err: err}
	}
	return &layered{class: client.ErrOutcomeUnknown, err: err, words: "outcome unknown: "}
}

var _ client.LockViewer = Transport{}

// LockStatus calls GET /v1/locks/{resource}.
func (t Transport) LockStatus(ctx context.Context, resource string) (wire.LockStatus, error) {
	v, err := t.C.LockStatus(ctx, resource)
	return v, mapErr(registryError(err))
}

// WatchLock calls GET /v1/locks/{resource}?waitMs=&afterRevision=.
func (t Transport) WatchLock(ctx context.Context, resource string, afterRevision uint64, wait time.Duration) (wire.LockStatus, error) {
	v, err := t.C.WatchLock(ctx, resource, afterRevision, wait)
	return v, mapErr(registryError(err))
}
