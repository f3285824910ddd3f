// Package httpclient is the production client.Transport: Client carries
// the client's calls over the registry's HTTP API and maps every answer
// onto the client's contract — a grant parsed straight into wire.Issued,
// registry codes back to the registry's sentinels, transport refusals to
// client.ErrRefused, and everything that may or may not have been applied
// (a timeout, a reset connection, a 5xx without a definite code, an
// unparsable answer) to an error the client treats as lost.
package httpclient

import (
	"errors"
	"fmt"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/wire"
)

// refusedCodes are the HTTP layer's definite refusals: the registry never
// acted on the request. A refusal by the resource policy is one too: an
// acquire ends, and a renewal the policy no longer allows ends the lease
// for the client (it stops its effects; the registry's lease runs out).
var refusedCodes = map[string]bool{
	wire.CodeBadRequest: true, wire.CodeTooLarge: true, wire.CodeUnauthenticated: true,
	wire.CodeForbidden: true, wire.CodeMethodNotAllowed: true, "MALFORMED": true,
	wire.CodeForbiddenResource: true, wire.CodeUnsupportedMediaType: true,
}

// callError is the one place a lease call's or lock view's failure
// becomes the client's contract: a registry code (UNAVAILABLE included,
// which the client classifies as lost itself) comes back as its registry
// sentinel, with the *APIError; a refusal by the HTTP layer wraps
// client.ErrRefused; anything else (INTERNAL, NOT_READY, TIMEOUT,
// CANCELED, network errors, a bad response) wraps
// client.ErrOutcomeUnknown.
func callError(err error) error {
	var api *APIError
	switch {
	case err == nil:
		return nil
	case !errors.As(err, &api):
	case registrySentinels[api.Code] != nil:
		// A 404 NOT_FOUND from the router is not the registry's
		// NOT_FOUND; the router's message names the path, and only /v1
		// routes are called.
		return fmt.Errorf("httpclient: %w", &remoteError{sentinel: sentinelOf(api), api: api})
	case refusedCodes[api.Code]:
		return &layered{class: client.ErrRefused, err: err}
	}
	return &layered{class: client.ErrOutcomeUnknown, err: err, words: "outcome unknown: "}
}

// registrySentinels maps each registry code to its sentinel.
var registrySentinels = func() map[string]*wire.Error {
	m := map[string]*wire.Error{}
	for _, e := range wire.RegistryErrors {
		m[e.Code()] = e
	}
	return m
}()

// sentinelOf is api's registry sentinel: a *wire.BusyError naming who
// holds the resource for BUSY and WAIT_TIMEOUT with a busy detail.
func sentinelOf(api *APIError) error {
	s := registrySentinels[api.Code]
	if api.Busy != nil && (s == wire.ErrBusy || s == wire.ErrWaitTimeout) {
		return &wire.BusyError{Sentinel: s, BusyDetail: *api.Busy}
	}
	return s
}

// remoteError is a registry error that came over HTTP: it is both the
// registry sentinel and the *APIError.
type remoteError struct {
	sentinel error // a *wire.Error, or a *wire.BusyError wrapping one
	api      *APIError
}

func (e *remoteError) Error() string   { return e.api.Message }
func (e *remoteError) Unwrap() []error { return []error{e.sentinel, e.api} }
