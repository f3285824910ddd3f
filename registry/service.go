package registry

import (
	crand "crypto/rand"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/wire"
)

// Registry is the imperative shell around the registry's decisions
// (package lockstate): it reads a resource's record from the Store,
// applies a pure decision at the clock's now, compare-and-swaps the result
// (retrying a bounded number of times on conflict), and signs what it
// issues. It keeps no state of its own beyond
// a cache of records that only saves round trips, so any number of
// Registries may share one Store.
//
// Every method is safe for concurrent use and takes a context that bounds
// its store calls and, for Acquire, its wait.
type Registry struct {
	store  Store
	cfg    Config
	lim    lockstate.Limits // what the decisions read of cfg
	clock  clock.Clock
	signer *grant.SigningKey

	locks keyLocks // one compare-and-swap per resource at a time, in this process

	randMu sync.Mutex
	rand   *rand.Rand // backoff jitter (Option WithRand); under randMu

	mu    sync.Mutex
	cache map[string]cachedRecord // resource → last record seen
	sets  cachedSettings
	// genSeen is the highest fence generation read from the store; unlike
	// the cache, a restore never lowers it (checkGeneration).
	genSeen uint64

	memo grantMemos // backend revisions and proofs of issued grants

	batch *batchSigner  // Config.BatchGrantProofs; nil: each grant signed alone
	early earlyReleases // releases answered before their commits returned (Config.ReleaseEarly)

	gates GateProver // per-gate proofs (WithGateProofs); nil: none
}

type cachedRecord struct {
	record *lockstate.Record
	raw    []byte // its stored bytes, when it came from a read
	rev    uint64
}

type cachedSettings struct {
	settings lockstate.Settings
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
// clk is the registry's only time source (expiry, waits, sweeps;
// clock.System in production).
func New(store Store, cfg Config, clk clock.Clock, signer *grant.SigningKey, opts ...Option) (*Registry, error) {
	if store == nil || clk == nil || signer == nil {
		return nil, fmt.Errorf("%w: new: store, clock and signer are required", wire.ErrInvalid)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &Registry{
		store: store, cfg: cfg, lim: cfg.limits(), clock: clk, signer: signer,
		cache: make(map[string]cachedRecord),
	}
	for _, o := range opts {
		o(r)
	}
	if cfg.BatchGrantProofs {
		var err error
		if r.batch, err = newBatchSigner(signer); err != nil {
			return nil, fmt.Errorf("%w: %w", wire.ErrInvalid, err)
		}
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
