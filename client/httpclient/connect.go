package httpclient

import (
	"context"
	"fmt"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/gate/bundlefetch"
	"github.com/fencegate/fencegate/grant"
)

// verifierCacheEntriesMax bounds the verify cache of a Worker's Verifier.
const verifierCacheEntriesMax = 1024

// TrustRefreshInterval is how often a Worker polls the registry's trust
// bundle for a newer one (a key rotation), 30 s: a rotation's overlap is
// minutes to hours.
const TrustRefreshInterval = 30 * time.Second

// Worker is what a worker process needs from a registry, in one value: a
// Session over HTTP (Lock, Acquire, elections) and the registry's trust
// bundle as a Verifier, for a gate the worker runs itself over its own
// database (sqlgate.OpenLocal). The Verifier follows key rotations for as
// long as Connect's context lives.
type Worker struct {
	*client.Session
	// Client is the registry's HTTP API (lock views, the trust bundle).
	Client *Client
	// Verifier checks the registry's proofs: give it to the gate.
	Verifier *grant.Verifier
}

// Connect dials the registry at baseURL (e.g. "https://registry:7420";
// credentials by WithBearerToken or, for mTLS, WithHTTPClient): it checks
// that the registry answers (GET /readyz), fetches its signed trust bundle
// (GET /v1/trust-bundle) and trusts it on first use — the bundle must be
// signed by a key of its own, and the trust is in the channel (use TLS to
// the registry; a process that must not trust the channel loads a pinned
// bundle with grant.LoadBundle instead) — then follows the registry's key
// rotations until ctx ends, taking a newer bundle only when the one in
// force vouches for it (grant.Bundle.VerifyUpdate). opts configure the
// HTTP client, which coalesces the calls the worker's goroutines make
// while a request is in flight (WithBatching, on by default here: a lone
// call still goes at once, alone; pass WithBatching to tune it); the
// session takes client.Options{} defaults.
func Connect(ctx context.Context, baseURL string, opts ...ClientOption) (*Worker, error) {
	c, err := NewClient(baseURL, append([]ClientOption{WithBatching(BatchOptions{})}, opts...)...)
	if err != nil {
		return nil, err
	}
	if err := c.Ready(ctx); err != nil {
		return nil, err
	}
	sb, err := c.TrustBundle(ctx)
	if err != nil {
		return nil, fmt.Errorf("httpclient: connect: trust bundle: %w", err)
	}
	b, err := grant.TrustOnFirstUse(sb, "")
	if err != nil {
		return nil, fmt.Errorf("httpclient: connect: trust bundle of %s: %w", baseURL, err)
	}
	w := &Worker{Session: client.NewSession(c, client.Options{}), Client: c, Verifier: grant.NewVerifier(b, verifierCacheEntriesMax)}
	f := &bundlefetch.Fetcher{Source: c.TrustBundle, Verifier: w.Verifier, Interval: TrustRefreshInterval}
	go f.Run(ctx)
	return w, nil
}
