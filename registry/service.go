package registry

import (
	crand "crypto/rand"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/fencegate/fencegate/grant"
)

// Registry is the imperative shell around the registry core: it reads a
// resource's record from the Store, applies a pure decision at the clock's
// now, compare-and-swaps the result (retrying a bounded number of times on
// conflict), and signs what it issues. It keeps no state of its own beyond
// a cache of records that only saves round trips, so any number of
// Registries may share one Store.
//
// Every method is safe for concurrent use and takes a context that bounds
// its store calls and, for Acquire, its wait.
type Registry struct {
	store  Store
	cfg    Config
	clock  Clock
	signer *grant.SigningKey

	locks keyLocks // one compare-and-swap per resource at a time, in this process

	randMu sync.Mutex
	rand   *rand.Rand // backoff jitter (Option WithRand); under randMu

	mu    sync.Mutex
	cache map[string]cachedRecord // resource → last record seen
	sets  cachedSettings

	memo grantMemos // backend revisions and proofs of issued grants
}

// AcquireRequest asks for the lease on a resource.
type AcquireRequest struct {
	Resource       string // canonical resource ID (grant.ValidateResource)
	OperationID    string // names the operation; the grant binds OperationRoot(Resource, OperationID)
	OperationClass string // grant.ValidateOperationClass
	// RequestID is the idempotency key, scoped to the owner: a retry with
	// the same ID returns the same grant while it lives, or its final
	// state; never a second grant.
	RequestID string
	// TTLMs is the lease's server-side TTL. Optional: 0 means
	// Config.TTLMsDefault; otherwise it must lie in [TTLMsMin, TTLMsMax].
	TTLMs uint64
	// WaitMs is how long to wait, FIFO behind other waiters, for the lease
	// to become free: 0 means fail at once with ErrBusy; larger values are
	// capped at Config.WaitMsMax. Not part of the request's identity.
	WaitMs uint64
}

// Issued is a grant with its proofs and a fresh status. For a grant whose
// issuer epoch is revoked, GrantProof and StatusProof are empty and
// Status.State is REVOKED: no proof is ever issued for it.
type Issued struct {
	Grant       *grant.Grant
	GrantProof  string
	Status      *grant.Status
	StatusProof string
	// ExpiresAfterMs, in a HELD answer, is how long after the request
	// reached the registry the lease expires, by the registry's clock; 0
	// when not known (an answer from before the field, or not HELD). The
	// request reached the registry after the client sent it, so a client
	// that counts its deadline from its own send plus ExpiresAfterMs can
	// only be early, never late, by the network delay (and by the skew
	// bound when another replica set the expiry; the client's
	// ExpiryMargin covers both, as it does for a renewal). It is what
	// makes a grant after a long wait usable for its whole TTL: the wait
	// is inside it.
	ExpiresAfterMs int64
}

// ResourceInfo is an operator's view of one resource.
type ResourceInfo struct {
	Resource         string
	HighestFence     uint64
	Floor            uint64
	PolicyGeneration uint64
	HolderLease      string // "" when free (expiry judged at the read)
	HolderOwner      string
	Waiters          int
	Revision         uint64 // store revision of the read
}

type cachedRecord struct {
	record *Record
	rev    uint64
}

type cachedSettings struct {
	settings Settings
	rev      uint64
	known    bool
}

// Option adjusts a Registry at New.
type Option func(*Registry)

// WithRand sets the random source of the backoff between compare-and-swap
// retries (the only randomness in the registry). Optional: by default a
// generator seeded from crypto/rand. The simulator passes a seeded one.
func WithRand(src rand.Source) Option {
	return func(r *Registry) { r.rand = rand.New(src) }
}

// New returns a Registry over store. cfg is validated and its defaults
// filled; signer signs every grant and status proof under cfg.IssuerEpoch;
// clock is the registry's only time source (expiry, waits, sweeps).
func New(store Store, cfg Config, clock Clock, signer *grant.SigningKey, opts ...Option) (*Registry, error) {
	if store == nil || clock == nil || signer == nil {
		return nil, fmt.Errorf("%w: new: store, clock and signer are required", ErrInvalid)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &Registry{
		store: store, cfg: cfg, clock: clock, signer: signer,
		cache: make(map[string]cachedRecord),
	}
	for _, o := range opts {
		o(r)
	}
	if r.rand == nil {
		var seed [16]byte
		_, _ = crand.Read(seed[:])
		r.rand = rand.New(rand.NewPCG(binary.LittleEndian.Uint64(seed[:8]), binary.LittleEndian.Uint64(seed[8:])))
	}
	return r, nil
}

// jitterMs draws in [0, maxMs) from the registry's random source.
func (r *Registry) jitterMs(maxMs int64) int64 {
	r.randMu.Lock()
	defer r.randMu.Unlock()
	return r.rand.Int64N(maxMs)
}

// Config returns the validated configuration with defaults filled.
func (r *Registry) Config() Config { return r.cfg }
