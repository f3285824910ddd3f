package client

import (
	"context"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/wire"
)

// Transport carries the client's calls to the registry. Its methods mirror
// the registry's, with the owner fixed by the transport: *httpclient.Client
// over HTTP (its identity is its client certificate or token), or
// registry.Direct in process. They speak the registry's own types: the
// request as wire.AcquireRequest, the answer as wire.Issued.
//
// Contract: a definite registry answer is returned as an error carrying a
// registry code (wire.CodeOf), a definite refusal by the transport
// itself wraps ErrRefused; every other error — a timeout, a reset
// connection, ErrOutcomeUnknown, wire.ErrUnavailable — means the call
// may or may not have been applied, and the client treats it as lost.
// Every method honours ctx.
type Transport interface {
	Acquire(ctx context.Context, req wire.AcquireRequest) (wire.Issued, error)
	Renew(ctx context.Context, resource, lease string) (wire.Issued, error)
	Release(ctx context.Context, resource, lease string) error
	Status(ctx context.Context, g *grant.Grant) (wire.Issued, error)
	QueryRequest(ctx context.Context, requestID string) (wire.Issued, error)
}
