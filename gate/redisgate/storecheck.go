package redisgate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// The store check. A Gate checks the Redis server behind its client
// before its first call (Open: at once) and again whenever the client
// has opened a connection since (a reconnect after a restart or a
// failover, or a pool that grew):
//
//   - the persistence settings (CheckPersistence): on a server that can
//     lose acknowledged writes, enforce mode is refused unless
//     Config.AcceptFenceLoss, and every check that finds a new run_id
//     logs the risk at ERROR level when it is accepted;
//   - the generation key, Config.Prefix + "generation": a random value
//     the first Gate writes and every later check reads back. Redis keeps
//     it as long as it keeps the gate's states. A value other than the
//     one this Gate saw means Redis lost its data (a restart without
//     persistence, a FLUSHALL, a replica promoted empty): from then on
//     this Gate answers FENCE_REGRESSION, and pauses, for every resource
//     whose state it finds gone — one it never saw may have held a
//     higher fence — and logs at ERROR level.
//
// A run_id that changed with the generation kept is a restart that lost
// nothing acknowledged (or lost only the last writes, which only
// appendfsync always rules out): logged at WARN level.

// GenerationKeySuffix follows Config.Prefix in the generation key's name.
const GenerationKeySuffix = "generation"

// storeCheck is what the last check found.
type storeCheck struct {
	mu      sync.Mutex
	done    bool   // a check ran
	conns   uint64 // connections the client had opened before it
	gen     string // the generation key's value
	runID   string // the servers' run_id
	lost    string // why Redis is known to have lost its data since the first check; "" if not
	refused error  // why enforce mode is refused (wraps ErrVolatilePersistence); nil if it is not
}

// connsOpened counts the connections c has opened: each pool miss opens
// one.
func connsOpened(c redis.UniversalClient) uint64 {
	s := c.PoolStats()
	n := uint64(s.Misses)
	if s.PipelineStats != nil {
		n += uint64(s.PipelineStats.Misses)
	}
	return n
}

// storeCheckDue reports whether checkStore would check now.
func (g *Gate) storeCheckDue() bool {
	g.store.mu.Lock()
	defer g.store.mu.Unlock()
	return !g.store.done || connsOpened(g.c) != g.store.conns
}

// checkStore runs the store check if it is due. It fails only when Redis
// cannot be asked; a server that cannot keep fences is recorded, not an
// error (enforceRefused).
func (g *Gate) checkStore(ctx context.Context) error {
	s := &g.store
	s.mu.Lock()
	defer s.mu.Unlock()
	conns := connsOpened(g.c)
	if s.done && conns == s.conns {
		return nil
	}
	reps, perr := CheckPersistence(ctx, g.c)
	if perr != nil && !errors.Is(perr, ErrVolatilePersistence) {
		return perr
	}
	gen, err := g.generation(ctx)
	if err != nil {
		return err
	}
	var ids []string
	for _, r := range reps {
		ids = append(ids, r.RunID)
	}
	runID := strings.Join(ids, ",")
	restarted := !s.done || runID != s.runID
	g.noteGeneration(gen, runID)
	g.notePersistence(perr, reps, restarted)
	s.done, s.conns = true, conns
	return nil
}

// generation reads the generation key, writing a new value first if
// there is none.
func (g *Gate) generation(ctx context.Context) (string, error) {
	var b [12]byte
	_, _ = rand.Read(b[:])
	fresh := hex.EncodeToString(b[:]) + " " + g.clock.Now().UTC().Format(time.RFC3339)
	key := g.prefix + GenerationKeySuffix
	var get *redis.StringCmd
	_, err := g.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.SetNX(ctx, key, fresh, 0)
		get = p.Get(ctx, key)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("redisgate: generation key %s: %w", key, err)
	}
	return get.Val(), nil
}

// noteGeneration compares what a check read with what the one before
// read (under store.mu).
func (g *Gate) noteGeneration(gen, runID string) {
	s := &g.store
	key := g.prefix + GenerationKeySuffix
	switch {
	case !s.done:
	case gen != s.gen:
		s.lost = fmt.Sprintf("its generation key %s holds %q, not the %q this gate saw before (run_id %s before, %s now)", key, gen, s.gen, s.runID, runID)
		g.log.Error("redisgate: REDIS LOST ITS DATA: every fenced resource on it may have gone back; this gate pauses each one whose state it finds older than it saw, or gone (FENCE_REGRESSION). Stop the writers, raise the registry's fence floors above every fence issued before, then resume each resource",
			slog.String("generation_key", key), slog.String("generation", gen), slog.String("generation_before", s.gen),
			slog.String("run_id", runID), slog.String("run_id_before", s.runID))
	case runID != s.runID:
		g.log.Warn("redisgate: Redis restarted (a new run_id) and kept its generation key",
			slog.String("run_id", runID), slog.String("run_id_before", s.runID), slog.String("generation", gen))
	}
	s.gen, s.runID = gen, runID
}

// notePersistence records a check's persistence verdict (under
// store.mu). restarted: the first check, or a new run_id.
func (g *Gate) notePersistence(perr error, reps []PersistenceReport, restarted bool) {
	s := &g.store
	switch {
	case perr == nil:
		s.refused = nil
	case g.accept:
		s.refused = nil
		if restarted {
			var bad []string
			for _, r := range reps {
				if p := r.problems(); p != "" {
					bad = append(bad, p)
				}
			}
			if len(bad) == 0 { // CONFIG GET refused: the settings are unknown
				bad = append(bad, perr.Error())
			}
			g.log.Error("redisgate: ENFORCE MODE ON A REDIS THAT CAN LOSE FENCES, accepted by Config.AcceptFenceLoss: after Redis loses acknowledged writes a stale write can be ACCEPTED",
				slog.String("settings", strings.Join(bad, "; ")))
		}
	default:
		if s.refused == nil || s.refused.Error() != perr.Error() {
			g.log.Error("redisgate: enforce mode refused", slog.String("settings", perr.Error()))
		}
		s.refused = perr
	}
}

// lostData is why Redis is known to have lost its data, "" if it is not.
func (g *Gate) lostData() string {
	g.store.mu.Lock()
	defer g.store.mu.Unlock()
	return g.store.lost
}

// enforceRefused returns why enforce mode is refused on this Gate's
// Redis, wrapping ErrVolatilePersistence, or nil.
func (g *Gate) enforceRefused() error {
	g.store.mu.Lock()
	defer g.store.mu.Unlock()
	return g.store.refused
}
