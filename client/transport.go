package client

import (
	"context"
	"errors"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
)

// Transport carries the client's calls to the registry. Its methods mirror
// registry.Registry's, with the owner fixed by the transport (the HTTP
// transport's identity is its client certificate or token).
//
// Contract: a definite registry answer is returned as an error carrying a
// registry code (registry.CodeOf), a definite refusal by the transport
// itself wraps ErrRefused; every other error — a timeout, a reset
// connection, ErrOutcomeUnknown, registry.ErrUnavailable — means the call
// may or may not have been applied, and the client treats it as lost.
// Every method honours ctx.
type Transport interface {
	Acquire(ctx context.Context, req registry.AcquireRequest) (registry.Issued, error)
	Renew(ctx context.Context, resource, lease string) (registry.Issued, error)
	Release(ctx context.Context, resource, lease string) error
	Status(ctx context.Context, g *grant.Grant) (registry.Issued, error)
	QueryRequest(ctx context.Context, requestID string) (registry.Issued, error)
}

// Direct is a Transport that calls a *registry.Registry in process as one
// owner. Tests, the simulator and single-process deployments use it.
type Direct struct {
	Registry *registry.Registry
	Owner    string
}

// Acquire calls Registry.Acquire as d.Owner.
func (d Direct) Acquire(ctx context.Context, req registry.AcquireRequest) (registry.Issued, error) {
	return d.Registry.Acquire(ctx, d.Owner, req)
}

// Renew calls Registry.Renew as d.Owner.
func (d Direct) Renew(ctx context.Context, resource, lease string) (registry.Issued, error) {
	return d.Registry.Renew(ctx, d.Owner, resource, lease)
}

// Release calls Registry.Release as d.Owner.
func (d Direct) Release(ctx context.Context, resource, lease string) error {
	return d.Registry.Release(ctx, d.Owner, resource, lease)
}

// Status calls Registry.Status.
func (d Direct) Status(ctx context.Context, g *grant.Grant) (registry.Issued, error) {
	return d.Registry.Status(ctx, g)
}

// QueryRequest calls Registry.QueryRequest as d.Owner.
func (d Direct) QueryRequest(ctx context.Context, requestID string) (registry.Issued, error) {
	return d.Registry.QueryRequest(ctx, d.Owner, requestID)
}

// answer classifies a registry call's result.
type answer int

const (
	answerOK      answer = iota
	answerLost           // may or may not have been applied
	answerRefused        // a definite "no": nothing was (or is) granted or held
	answerRetry          // a definite "nothing changed, try again" (CONFLICT)
)

// classify maps err to an answer class. Only a definite registry code is a
// refusal; everything else is lost.
func classify(err error) answer {
	if err == nil {
		return answerOK
	}
	switch registry.CodeOf(err) {
	case "":
		if errors.Is(err, ErrRefused) {
			return answerRefused
		}
		return answerLost
	case "UNAVAILABLE":
		return answerLost
	case "CONFLICT":
		return answerRetry
	}
	if errors.Is(err, ErrOutcomeUnknown) {
		return answerLost
	}
	return answerRefused
}
