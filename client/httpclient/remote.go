package httpclient

import (
	"context"
	"errors"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/wire"
)

// remote adapts a Client to the registry's own Go method set, with the
// owner fixed by the client's identity. An error response with a registry
// code comes back wrapping that code's registry sentinel
// (errors.Is(err, wire.ErrBusy), wire.CodeOf(err) == "BUSY"), so callers
// branch the same way over HTTP as in process. Every other failure (a
// transport code, TIMEOUT, a broken connection, a bad response) carries no
// registry code: Transport classifies it.
type remote struct {
	Client *Client
}

// Acquire calls POST /v1/acquire.
func (t remote) Acquire(ctx context.Context, req wire.AcquireRequest) (wire.Issued, error) {
	return toRegistry(t.Client.Acquire(ctx, req))
}

// Renew calls POST /v1/renew.
func (t remote) Renew(ctx context.Context, resource, lease string) (wire.Issued, error) {
	return toRegistry(t.Client.Renew(ctx, resource, lease))
}

// Release calls POST /v1/release.
func (t remote) Release(ctx context.Context, resource, lease string) error {
	return registryError(t.Client.Release(ctx, resource, lease))
}

// Status calls POST /v1/status with g's canonical text.
func (t remote) Status(ctx context.Context, g *grant.Grant) (wire.Issued, error) {
	return toRegistry(t.Client.Status(ctx, g.Encode()))
}

// QueryRequest calls GET /v1/requests/{requestId}.
func (t remote) QueryRequest(ctx context.Context, requestID string) (wire.Issued, error) {
	return toRegistry(t.Client.QueryRequest(ctx, requestID))
}

func toRegistry(is *Issued, err error) (wire.Issued, error) {
	if err != nil {
		return wire.Issued{}, registryError(err)
	}
	return wire.Issued{Grant: is.Grant, GrantProof: is.GrantProof, Status: is.Status, StatusProof: is.StatusProof, ExpiresAfterMs: is.ExpiresAfterMs, GateProofs: is.GateProofs}, nil
}

// registrySentinels maps each registry code to its sentinel.
var registrySentinels = func() map[string]*wire.Error {
	m := map[string]*wire.Error{}
	for _, e := range wire.RegistryErrors {
		m[e.Code()] = e
	}
	return m
}()

// remoteError is a registry error that came over HTTP: it is both the
// registry sentinel and the *APIError.
type remoteError struct {
	sentinel error // a *wire.Error, or a *wire.BusyError wrapping one
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
		if ae.Busy != nil && (s == wire.ErrBusy || s == wire.ErrWaitTimeout) {
			return &remoteError{sentinel: &wire.BusyError{Sentinel: s, BusyDetail: *ae.Busy}, api: ae}
		}
		return &remoteError{sentinel: s, api: ae}
	}
	return err
}
