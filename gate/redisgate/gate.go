// Package redisgate runs the gate decision for a resource kept in Redis:
// Apply verifies a mutation (gate.Policy.Authenticate), decides in Go
// (adapt.Decider.DecideLocked, the one decision implementation) on the
// resource's stored gate state, and commits the business commands, the
// new state and the receipt in one atomic step that happens only if the
// state is still the one decided on. No gate rule runs in Redis.
//
// The Gate keeps the last state it saw per resource (a bounded LRU,
// Config.CachedStatesMax). A warm write is one round trip: Go decides on
// the cached state, and a compare-and-set script (loaded once, run by
// EVALSHA) compares the stored state — and the receipt at the mutation's
// fence and segment — with the bytes decided on, byte for byte, and only
// then runs the commands; otherwise it answers the stored values and Go
// decides again on them. A cold resource is read under WATCH and
// committed with MULTI/EXEC, which Redis runs only if nothing wrote the
// state since the read; a conflict is retried (RetriesMax). A decision on
// the cache that writes nothing (a replay, most rejections) is taken
// again on a fresh read before it is answered: a stale cache may cost a
// round trip, never a wrong answer.
//
// # Use
//
//	g, err := redisgate.Open(ctx, redisgate.Config{Client: rdb, Policy: gate.Policy{Verifier: v}})
//	rcpt, err := g.Apply(ctx, caller, m, func(ctx context.Context) ([]redisgate.Command, error) {
//		return []redisgate.Command{{"HSET", g.KeysOf(m.Resource).Tag + ":invoice", "total", total}}, nil
//	})
//
// The business change is data: the commands fn returns run in the same
// atomic step as the gate's writes. Returning an error writes nothing.
//
// # Keys
//
// Per resource, under Config.Prefix and the hash tag {resource} (so that
// a Redis Cluster keeps them, and business keys tagged the same way, in
// one slot): state (gate.FenceState as JSON; the key WATCH guards and the
// script compares), receipts (a hash "fence:seq" → receipt JSON, never
// updated or deleted), op:<id> (a list of the receipt fields of one
// operation), and the lists alarms, quarantine, shadow and actions.
//
// # What Redis can and cannot promise
//
// EXEC and a script are each atomic on one server: no other client sees
// the business change without the receipt or the new highestFence.
// Neither rolls back a command that fails while it runs (a WRONGTYPE, an
// out-of-memory): the gate's writes go through with the others, and
// Apply returns ErrBusinessPartial. Send only commands that cannot fail
// at run time.
//
// # When Redis loses writes
//
// A restart without appendfsync always, a crash of the machine, a
// failover to a replica that lagged, a FLUSHALL or an eviction can lose
// writes Redis acknowledged, and with them the receipt and the
// highestFence they raised: a stale writer the lost state would have
// rejected would be accepted. So:
//
//   - Open checks the server (CheckPersistence) and refuses enforce mode,
//     naming the setting, unless the append-only file is on with
//     appendfsync always and nothing can evict the gate's keys;
//     Config.AcceptFenceLoss overrides that, logged at ERROR level. New
//     checks at the first call instead. `fencegate probe redis` runs the
//     same check.
//   - A Gate remembers the furthest state it saw stored per resource
//     (CachedStatesMax of them, kept when it drops a cached state after
//     an error); a state read behind it, or gone, is answered
//     FENCE_REGRESSION and the resource is paused with highestFence
//     restored, never lowered (wentback.go).
//   - After every new connection it checks the server again, and reads
//     the generation key that Redis keeps as long as it keeps the
//     states: a changed one means Redis lost its data, and every resource
//     found without a state is answered FENCE_REGRESSION too
//     (storecheck.go).
//
// A loss the Gate did not live through — it started, or restarted,
// after it — cannot be seen: that is what the persistence check is for.
//
// Replication is asynchronous. A write acknowledged by a primary that
// then fails over before a replica received it is lost in the same way;
// the Gate sees it only for the resources it remembers. Config.ReplicasMin makes
// Apply wait (WAIT) until that many replicas acknowledged the EXEC and
// report ErrReplicationUnconfirmed otherwise (treat it as
// MUTATION_UNKNOWN); it narrows the window, it does not make Redis
// strongly consistent (a failover may still promote a replica that did
// not acknowledge). For fencing that survives any failover, keep the
// resource on one primary with appendfsync always and no automatic
// failover, or use a SQL resource; after a failover, pause writers and
// Resume each resource with the registry's current fence floor.
package redisgate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/adapt"
	"github.com/fencegate/fencegate/gate/internal/adapter"
	"github.com/fencegate/fencegate/gate/internal/stored"
)

// Defaults.
const (
	// PrefixDefault is the key prefix when Config.Prefix is empty.
	PrefixDefault = "fencegate:"
	// RetriesMaxDefault bounds optimistic retries of one Apply when
	// Config.RetriesMax is zero: enough for a few dozen writers racing on
	// one resource, few enough that a livelock ends in an error.
	RetriesMaxDefault = 64
	// ReplicasTimeoutDefault bounds WAIT when Config.ReplicasTimeout is
	// zero.
	ReplicasTimeoutDefault = time.Second
	// CachedStatesMaxDefault bounds the resources whose state a Gate
	// keeps when Config.CachedStatesMax is zero: about 1 KiB each, so a
	// few MiB; a resource evicted costs one more round trip on its next
	// write.
	CachedStatesMaxDefault = 4096
)

// Config configures a Gate.
type Config struct {
	// Client reaches the Redis server (a *redis.Client, or a cluster or
	// failover client). Required.
	Client redis.UniversalClient
	// Policy holds the trust bundle verifier, allowed operation classes
	// and status skew bound. Required (Policy.Verifier at least).
	Policy gate.Policy
	// Querier, if set, is the registry's linearizable status query, asked
	// while the state is watched (see adapt.Decider). Optional.
	Querier gate.StatusQuerier
	// StatusQueryTimeout bounds one Querier call. Optional, defaults to
	// adapt.QueryTimeoutDefault.
	StatusQueryTimeout time.Duration
	// Clock is the gate's clock. Optional, defaults to the system clock.
	Clock clock.Clock
	// Prefix starts every key. Optional, defaults to PrefixDefault.
	Prefix string
	// DefaultMode is the mode of a resource seen for the first time.
	// Optional, defaults to gate.ModeEnforce.
	DefaultMode gate.Mode
	// RetriesMax bounds the read–decide–EXEC attempts of one Apply when
	// other writers keep changing the state. Optional, defaults to
	// RetriesMaxDefault.
	RetriesMax int
	// ReplicasMin: after each EXEC, WAIT for this many replicas. Optional,
	// defaults to 0 (no WAIT).
	ReplicasMin int
	// ReplicasTimeout bounds that WAIT. Optional, defaults to
	// ReplicasTimeoutDefault.
	ReplicasTimeout time.Duration
	// AcceptFenceLoss allows enforce mode on a Redis that can lose writes
	// it acknowledged (CheckPersistence names the settings: appendonly
	// no, an appendfsync other than always, allkeys eviction): the
	// operator accepts that after such a loss a stale write can be
	// ACCEPTED for a resource this Gate does not remember. Each check
	// that finds the server (re)started logs it at ERROR level. Optional,
	// defaults to false: enforce mode is refused on such a server.
	AcceptFenceLoss bool
	// Logger receives the store check's findings (a refusal, an accepted
	// risk, a restart, lost data). Optional, defaults to slog.Default().
	Logger *slog.Logger
	// CachedStatesMax bounds the resources whose last state the Gate
	// keeps (least recently used evicted), and whose furthest stored
	// state it remembers to notice Redis losing writes. Optional: zero
	// takes CachedStatesMaxDefault; negative keeps no state, so every
	// write is read under WATCH and committed with MULTI/EXEC (two round
	// trips), and remembers CachedStatesMaxDefault resources.
	CachedStatesMax int
}

// Gate applies fenced mutations to Redis. It is safe for concurrent use;
// the states it caches are only a shortcut, checked by every commit.
type Gate struct {
	c        redis.UniversalClient
	dec      adapt.Decider
	clock    clock.Clock
	prefix   string
	mode     gate.Mode
	retries  int
	replicas int
	waitFor  time.Duration
	counters gate.Counters
	cache    *stateCache
	store    storeCheck // what the last check of the server found
	accept   bool       // Config.AcceptFenceLoss
	log      *slog.Logger
	script   *redis.Script // casScript; a test's mutant may replace it
	noWatch  bool          // tests only: the negative control's mutant
}

// Errors.
var (
	// ErrBusiness wraps the business function's error: nothing was written.
	ErrBusiness = errors.New("redisgate: business change failed")
	// ErrBusinessPartial: a queued business command failed while EXEC
	// ran; Redis does not roll back, so the other commands, the receipt
	// and the new state were written.
	ErrBusinessPartial = errors.New("redisgate: a business command failed inside EXEC (Redis does not roll back)")
	// ErrContended: RetriesMax attempts all lost the race for the state.
	// Nothing was written; the caller may retry.
	ErrContended = errors.New("redisgate: state kept changing; gave up")
	// ErrReplicationUnconfirmed: the EXEC committed on the primary but
	// fewer than ReplicasMin replicas acknowledged it in time; a failover
	// may lose it. Treat as MUTATION_UNKNOWN.
	ErrReplicationUnconfirmed = errors.New("redisgate: write not acknowledged by enough replicas")
)

// Open checks cfg, checks the Redis server (its persistence and
// generation key; see CheckPersistence) and returns a Gate. On a server
// that can lose acknowledged writes it returns an error wrapping
// ErrVolatilePersistence, naming the settings, unless DefaultMode is
// shadow or cfg.AcceptFenceLoss is set; a Gate opened on such a server
// in shadow mode refuses SetMode(enforce) and every resource stored in
// enforce mode.
func Open(ctx context.Context, cfg Config) (*Gate, error) {
	g, err := New(cfg)
	if err != nil {
		return nil, err
	}
	if err := g.checkStore(ctx); err != nil {
		return nil, err
	}
	if err := g.enforceRefused(); err != nil && g.mode == gate.ModeEnforce {
		return nil, err
	}
	return g, nil
}

// New checks cfg and returns a Gate without contacting Redis: it checks
// the server, as Open does, at its first call, and refuses enforce mode
// from then on if the server can lose acknowledged writes (Apply and
// SetMode return an error wrapping ErrVolatilePersistence for an
// enforced resource). Open reports that at start.
func New(cfg Config) (*Gate, error) {
	if cfg.Client == nil {
		return nil, errors.New("redisgate: Config.Client is required")
	}
	b, err := adapter.Common{Policy: cfg.Policy, Querier: cfg.Querier, StatusQueryTimeout: cfg.StatusQueryTimeout,
		Clock: cfg.Clock, DefaultMode: cfg.DefaultMode}.Resolve()
	if err != nil {
		return nil, err
	}
	g := &Gate{c: cfg.Client, dec: b.Decider, clock: b.Clock, prefix: cfg.Prefix, mode: b.Mode,
		retries: cfg.RetriesMax, replicas: cfg.ReplicasMin, waitFor: cfg.ReplicasTimeout, script: casScript,
		accept: cfg.AcceptFenceLoss, log: cfg.Logger}
	if g.log == nil {
		g.log = slog.Default()
	}
	if g.prefix == "" {
		g.prefix = PrefixDefault
	}
	if g.retries <= 0 {
		g.retries = RetriesMaxDefault
	}
	if g.replicas < 0 {
		return nil, fmt.Errorf("redisgate: ReplicasMin %d is negative", g.replicas)
	}
	if g.waitFor <= 0 {
		g.waitFor = ReplicasTimeoutDefault
	}
	n := cfg.CachedStatesMax
	if n == 0 {
		n = CachedStatesMaxDefault
	}
	g.cache = newStateCache(n)
	return g, nil
}

// Counters returns the per-outcome decision counters.
func (g *Gate) Counters() *gate.Counters { return &g.counters }

// Record is one alarm, quarantine, shadow-log or operator-action entry.
type Record = stored.Record

// Keys names one resource's keys.
type Keys struct {
	// Tag is "{resource}" with the prefix before it: business keys that
	// start with Tag hash to the resource's Redis Cluster slot.
	Tag                                 string
	State, Receipts                     string
	Alarms, Quarantine, Shadow, Actions string
}

// KeysOf returns the keys of resource.
func (g *Gate) KeysOf(resource string) Keys {
	t := g.prefix + "{" + resource + "}"
	return Keys{Tag: t, State: t + ":state", Receipts: t + ":receipts", Alarms: t + ":alarms",
		Quarantine: t + ":quarantine", Shadow: t + ":shadow", Actions: t + ":actions"}
}

func (k Keys) op(operationID string) string { return k.Tag + ":op:" + operationID }

func receiptField(fence, seq uint64) string { return fmt.Sprintf("%d:%d", fence, seq) }

// checkResource validates a resource name given to an operator call.
func checkResource(resource string) error { return adapter.CheckResource("redisgate", resource) }
