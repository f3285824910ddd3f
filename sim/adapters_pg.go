package sim

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/pggate"
	"github.com/fencegate/fencegate/grant"
)

// pgEnv is the PostgreSQL mode's database: a fresh one on the server
// Config.PGDSN names, made for one goroutine's rounds (each round has
// resources of its own name) and dropped at the end. The gate is
// gate/pggate: the decision runs in PL/pgSQL, proofs are checked there
// with pgcrypto under the run's HMAC keys, and each write runs as the
// database role of its caller. The gate clock is the round's, set before
// each call.
type pgEnv struct {
	dsn, name string
	db        *sql.DB

	mu      sync.Mutex
	roles   map[string]string // caller → role
	clockMs int64
}

var pgEnvSeq atomic.Uint64

// newPGEnv creates and installs the database for rounds of cfg with keys.
func newPGEnv(cfg *Config, keys *keySet) (*sqlEnv, error) {
	ctx := context.Background()
	admin, err := pggate.Open(cfg.PGDSN, "")
	if err != nil {
		return nil, fmt.Errorf("sim: pg mode: %w", err)
	}
	defer admin.Close()
	p := &pgEnv{dsn: cfg.PGDSN, name: fmt.Sprintf("fencegate_sim_%d_%d", os.Getpid(), pgEnvSeq.Add(1)), roles: map[string]string{}}
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+p.name); err != nil {
		return nil, fmt.Errorf("sim: pg mode: %w", err)
	}
	if p.db, err = pggate.Open(cfg.PGDSN, p.name); err == nil {
		err = p.setUp(ctx, cfg, keys)
	}
	if err != nil {
		p.close()
		return nil, fmt.Errorf("sim: pg mode: %w", err)
	}
	return &sqlEnv{pg: p}, nil
}

func (p *pgEnv) setUp(ctx context.Context, cfg *Config, keys *keySet) error {
	if _, err := pggate.Install(ctx, p.db); err != nil {
		return err
	}
	if err := pggate.SetSkew(ctx, p.db, cfg.skewBound()); err != nil {
		return err
	}
	if err := pggate.SetDefaultMode(ctx, p.db, cfg.mode()); err != nil {
		return err
	}
	type entry struct {
		sk         *grant.SigningKey
		minE, maxE uint64
		st         grant.KeyState
	}
	entries := []entry{{keys.registry, epochLive, 0, grant.KeyActive}, {keys.old, 1, epochRevoked, grant.KeyVerifyOnly}, {keys.retired, 1, 0, grant.KeyRetired}}
	revokedBelow := uint64(epochLive)
	if cfg.Negative != nil && cfg.Negative.TrustEveryKey { // the trust-all bundle of the no-authentication control
		entries = []entry{{keys.registry, 1, 0, grant.KeyActive}, {keys.old, 1, 0, grant.KeyActive}, {keys.retired, 1, 0, grant.KeyActive}, {keys.evil, 1, 0, grant.KeyActive}}
		revokedBelow = 0
	}
	for _, e := range entries {
		k, err := pggate.KeyOf(e.sk, e.minE, e.maxE, e.st)
		if err == nil {
			err = pggate.SetKey(ctx, p.db, k)
		}
		if err != nil {
			return err
		}
	}
	return pggate.SetRevokedBelow(ctx, p.db, revokedBelow)
}

func (p *pgEnv) close() {
	if p.db != nil {
		p.db.Close()
	}
	if admin, err := pggate.Open(p.dsn, ""); err == nil {
		admin.Exec("DROP DATABASE IF EXISTS " + p.name + " WITH (FORCE)")
		admin.Close()
	}
}

// role returns the database role of caller, created (cluster-wide) and
// mapped to it on first use.
func (p *pgEnv) role(ctx context.Context, caller string) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r, ok := p.roles[caller]; ok {
		return r, nil
	}
	h := sha256.Sum256([]byte(caller))
	r := "fgsim_" + hex.EncodeToString(h[:8])
	stmts := []string{
		`DO $$ BEGIN CREATE ROLE ` + r + ` NOLOGIN; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$`,
		// Roles are cluster-wide and rounds run in parallel on databases
		// of their own: two may grant one membership at once, and the
		// loser's unique violation means the grant stands.
		`DO $$ BEGIN GRANT fencegate_writer TO ` + r + `; EXCEPTION WHEN unique_violation THEN NULL; END $$`,
	}
	for _, s := range stmts {
		if _, err := p.db.ExecContext(ctx, s); err != nil {
			return "", err
		}
	}
	if err := pggate.MapCaller(ctx, p.db, r, caller); err != nil {
		return "", err
	}
	p.roles[caller] = r
	return r, nil
}

// pgAdapter is the PostgreSQL mode: gate/pggate for the resources; the
// downstream hop's target stays on gate/memgate (jobs), reading its
// upstream receipts from the database.
type pgAdapter struct {
	env  *sqlEnv
	jobs memAdapter
}

// sync sets the database's gate clock to the round's gate clock.
func (a pgAdapter) sync(ctx context.Context) {
	p := a.env.pg
	now := a.env.gateNow()
	if now.UnixMilli() == p.clockMs {
		return
	}
	if err := pggate.SetClock(ctx, p.db, now); err != nil {
		panic("sim: pggate clock: " + err.Error())
	}
	p.clockMs = now.UnixMilli()
}

func (a pgAdapter) apply(m *gate.Mutation, caller string, business func()) (gate.Receipt, error) {
	ctx := context.Background()
	p := a.env.pg
	nowMs := a.env.gateNow().UnixMilli()
	// Each transaction sets the clock (the round runs alone on this
	// database) and becomes the caller's role, in one round trip.
	begin := func(ctx context.Context) (*sql.Tx, error) {
		r, err := p.role(ctx, caller)
		if err != nil {
			return nil, err
		}
		tx, err := p.db.BeginTx(ctx, nil)
		if err == nil {
			if _, err = tx.ExecContext(ctx, fmt.Sprintf("SELECT fencegate.set_clock(%d); SET LOCAL SESSION AUTHORIZATION %s", nowMs, r)); err != nil {
				tx.Rollback()
			}
		}
		return tx, err
	}
	p.clockMs = nowMs
	rc, err := pggate.RunIn(ctx, p.db, begin, m, func(context.Context, *sql.Tx) error { business(); return nil })
	if err != nil && gate.OutcomeOf(err) == "" {
		panic("sim: pggate apply: " + err.Error())
	}
	return rc, err
}

func (a pgAdapter) applyJob(hop string, j *gate.Job, business func()) (gate.Receipt, error) {
	return a.jobs.g.ApplyJob(context.Background(), hop, j, pggate.Upstream{Q: a.env.pg.db}, func() error { business(); return nil })
}

func (a pgAdapter) state(resource string) gate.FenceState {
	st, err := pggate.State(context.Background(), a.env.pg.db, resource)
	if err != nil {
		panic("sim: pggate state: " + err.Error())
	}
	return st
}

func (a pgAdapter) query(resource, op string, fence uint64) gate.Answer {
	ans, err := pggate.QueryOperation(context.Background(), a.env.pg.db, resource, op, fence)
	if err != nil {
		panic("sim: pggate query: " + err.Error())
	}
	return ans
}

func (a pgAdapter) resume(resource string, floor uint64) error {
	ctx := context.Background()
	a.sync(ctx)
	return pggate.Resume(ctx, a.env.pg.db, resource, floor, "operator", "simulated: registry floor raised")
}
