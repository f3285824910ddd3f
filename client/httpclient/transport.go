// Package httpclient is the production client.Transport: it carries the
// client's calls over the registry's HTTP API (registry/httpapi.Client)
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

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/httpapi"
)

// Transport is a client.Transport over an httpapi.Client. The caller's
// identity is the client's credentials (client certificate or bearer token).
type Transport struct {
	C *httpapi.Client
}

var _ client.Transport = Transport{}

// Acquire calls POST /v1/acquire.
func (t Transport) Acquire(ctx context.Context, req registry.AcquireRequest) (registry.Issued, error) {
	return issued(t.C.Acquire(ctx, httpapi.AcquireRequest{
		Resource: req.Resource, OperationID: req.OperationID, OperationClass: req.OperationClass,
		RequestID: req.RequestID, TTLMs: req.TTLMs, WaitMs: req.WaitMs,
	}))
}

// Renew calls POST /v1/renew.
func (t Transport) Renew(ctx context.Context, resource, lease string) (registry.Issued, error) {
	return issued(t.C.Renew(ctx, resource, lease))
}

// Release calls POST /v1/release.
func (t Transport) Release(ctx context.Context, resource, lease string) error {
	return mapErr(t.C.Release(ctx, resource, lease))
}

// Status calls POST /v1/status with the grant's canonical text.
func (t Transport) Status(ctx context.Context, g *grant.Grant) (registry.Issued, error) {
	return issued(t.C.Status(ctx, g.Encode()))
}

// QueryRequest calls GET /v1/requests/{requestId}.
func (t Transport) QueryRequest(ctx context.Context, requestID string) (registry.Issued, error) {
	return issued(t.C.QueryRequest(ctx, requestID))
}

func issued(is *httpapi.Issued, err error) (registry.Issued, error) {
	if err != nil {
		return registry.Issued{}, mapErr(err)
	}
	return registry.Issued{Grant: is.Grant, GrantProof: is.GrantProof, Status: is.Status, StatusProof: is.StatusProof}, nil
}

// registryCodes are the registry's definite answers, by wire code.
// UNAVAILABLE is among them: the client classifies it as lost itself.
var registryCodes = map[string]error{
	"INVALID": registry.ErrInvalid, "TTL_OUT_OF_RANGE": registry.ErrTTLOutOfRange,
	"REQUEST_MISMATCH": registry.ErrRequestMismatch, "BUSY": registry.ErrBusy,
	"WAIT_TIMEOUT": registry.ErrWaitTimeout, "WAITERS_FULL": registry.ErrWaitersFull,
	"NOT_HOLDER": registry.ErrNotHolder, "LEASE_EXPIRED": registry.ErrLeaseExpired,
	"EPOCH_REVOKED": registry.ErrEpochRevoked, "NOT_FOUND": registry.ErrNotFound,
	"CONFLICT": registry.ErrConflict, "UNAVAILABLE": registry.ErrUnavailable,
	"CORRUPT": registry.ErrCorrupt,
}

// refusedCodes are the HTTP layer's definite refusals: the registry never
// acted on the request.
var refusedCodes = map[string]bool{
	httpapi.CodeBadRequest: true, httpapi.CodeTooLarge: true, httpapi.CodeUnauthenticated: true,
	httpapi.CodeForbidden: true, httpapi.CodeMethodNotAllowed: true, "MALFORMED": true,
}

// mapErr turns an httpapi error into the client's contract. Anything not
// definite (INTERNAL, NOT_READY, TIMEOUT, CANCELED, network errors, a bad
// response) wraps client.ErrOutcomeUnknown.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	var api *httpapi.APIError
	if errors.As(err, &api) {
		if s, ok := registryCodes[api.Code]; ok {
			return fmt.Errorf("httpclient: %w: %w", s, err)
		}
		if refusedCodes[api.Code] {
			return fmt.Errorf("httpclient: %w: %w", client.ErrRefused, err)
		}
	}
	return fmt.Errorf("httpclient: %w: %w", client.ErrOutcomeUnknown, err)
}
