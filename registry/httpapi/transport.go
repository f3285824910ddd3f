package httpapi

import (
	"context"
	"errors"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
)

// Transport adapts a Client to the registry's own Go method set, with the
// owner fixed by the client's identity: the shape of the client SDK's
// client.Transport. An error response with a registry code comes back
// wrapping that code's registry sentinel (errors.Is(err, registry.ErrBusy),
// registry.CodeOf(err) == "BUSY"), so callers branch the same way over
// HTTP as in process. Every other failure (a transport code, TIMEOUT, a
// broken connection, a bad response) carries no registry code: its outcome
// is unknown to the caller.
type Transport struct {
	Client *Client
}

// Acquire calls POST /v1/acquire.
func (t Transport) Acquire(ctx context.Context, req registry.AcquireRequest) (registry.Issued, error) {
	is, err := t.Client.Acquire(ctx, AcquireRequest{
		Resource: req.Resource, OperationID: req.OperationID, OperationClass: req.OperationClass,
		RequestID: req.RequestID, TTLMs: req.TTLMs, WaitMs: req.WaitMs,
	})
	return toRegistry(is, err)
}

// Renew calls POST /v1/renew.
func (t Transport) Renew(ctx context.Context, resource, lease string) (registry.Issued, error) {
	return toRegistry(t.Client.Renew(ctx, resource, lease))
}

// Release calls POST /v1/release.
func (t Transport) Release(ctx context.Context, resource, lease string) error {
	return registryError(t.Client.Release(ctx, resource, lease))
}

// Status calls POST /v1/status with g's canonical text.
func (t Transport) Status(ctx context.Context, g *grant.Grant) (registry.Issued, error) {
	return toRegistry(t.Client.Status(ctx, g.Encode()))
}

// QueryRequest calls GET /v1/requests/{requestId}.
func (t Transport) QueryRequest(ctx context.Context, requestID string) (registry.Issued, error) {
	return toRegistry(t.Client.QueryRequest(ctx, requestID))
}

func toRegistry(is *Issued, err error) (registry.Issued, error) {
	if err != nil {
		return registry.Issued{}, registryError(err)
	}
	return registry.Issued{Grant: is.Grant, GrantProof: is.GrantProof, Status: is.Status, StatusProof: is.StatusProof, ExpiresAfterMs: is.ExpiresAfterMs}, nil
}

// registrySentinels maps each registry code to its sentinel.
var registrySentinels = func() map[string]*registry.Error {
	m := map[string]*registry.Error{}
	for _, e := range []*registry.Error{
		registry.ErrInvalid, registry.ErrTTLOutOfRange, registry.ErrRequestMismatch,
		registry.ErrBusy, registry.ErrWaitTimeout, registry.ErrWaitersFull,
		registry.ErrNotHolder, registry.ErrLeaseExpired, registry.ErrEpochRevoked,
		registry.ErrNotFound, registry.ErrConflict, registry.ErrUnavailable, registry.ErrCorrupt,
	} {
		m[e.Code()] = e
	}
	return m
}()

// remoteError is a registry error that came over HTTP: it is both the
// registry sentinel and the *APIError.
type remoteError struct {
	sentinel *registry.Error
	api      *APIError
}

func (e *remoteError) Error() string   { return e.api.Message }
func (e *remoteError) Unwrap() []error { return []error{e.sentinel, e.api} }

func registryError(err error) error {
	var ae *APIError
	if !errors.As(err, &ae) {
		return err
	}
	// A 404 NOT_FOUND from the router is not the registry's NOT_FOUND; the
	// router's message names the path, and only /v1 routes are called.
	if s, ok := registrySentinels[ae.Code]; ok {
		return &remoteError{sentinel: s, api: ae}
	}
	return err
}
