package clienttest

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/client/reconcile"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/sqlgate"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/wire"
)

// Fixture constants shared by the client's tests and scenarios.
const (
	Resource = "invoice-batch/2026-07-19"
	OwnerA   = "worker-settlement-7"
	OwnerB   = "worker-settlement-8"
	TTL      = 10 * time.Second
)

// Env is one test's world: a fake clock, a real registry over a store of
// the caller's choice, and helpers to add workers and a gated resource.
type Env struct {
	T     testing.TB
	Ctx   context.Context
	Clock *FakeClock
	Reg   *Registry
	// Tune, if set, adjusts the options of each Worker made after it is set.
	Tune func(*client.Options)
}

// NewEnv returns an Env over store (nil: a memory store).
func NewEnv(t testing.TB, store registry.Store) *Env {
	t.Helper()
	clock := NewFakeClock()
	reg, err := NewRegistry(clock, store, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &Env{T: t, Ctx: context.Background(), Clock: clock, Reg: reg}
}

// Worker is one owner's session behind its own lossy network.
type Worker struct {
	Net *Lossy
	S   *client.Session
	Rec *Recorder
}

// Worker returns a session for owner with a rand seeded by seed.
func (e *Env) Worker(owner string, seed uint64, manual bool) *Worker {
	w := &Worker{Rec: &Recorder{}}
	w.Net = &Lossy{Inner: registry.Direct{Registry: e.Reg.Registry, Owner: owner}}
	o := client.Options{
		Clock: e.Clock, Rand: rand.New(rand.NewPCG(seed, seed)), Manual: manual, OnTransition: w.Rec.Add,
	}
	if e.Tune != nil {
		e.Tune(&o)
	}
	w.S = client.NewSession(w.Net, o)
	return w
}

// Request is an acquire of Resource for operation op with TTL.
func Request(op string) wire.AcquireRequest {
	return wire.AcquireRequest{Resource: Resource, OperationID: op, OperationClass: "settle", TTLMs: uint64(TTL / time.Millisecond)}
}

// Acquire runs Session.Acquire while advancing the fake clock in small
// steps, so backoffs pass without real waiting.
func (e *Env) Acquire(ctx context.Context, w *Worker, r wire.AcquireRequest) (*client.Lease, error) {
	type result struct {
		l   *client.Lease
		err error
	}
	ch := make(chan result, 1)
	go func() {
		l, err := w.S.Acquire(ctx, r)
		ch <- result{l, err}
	}()
	for {
		select {
		case res := <-ch:
			return res.l, res.err
		case <-time.After(200 * time.Microsecond):
			e.Clock.Advance(20 * time.Millisecond) // small against CallTimeout, so a slow machine rarely times a call out
		}
	}
}

// TickUntil advances the clock in steps of d, ticking l, until cond holds.
func (e *Env) TickUntil(l *client.Lease, d time.Duration, cond func() bool) {
	e.T.Helper()
	for i := 0; i < 10000; i++ {
		if cond() {
			return
		}
		e.Clock.Advance(d)
		l.Tick(e.Ctx)
	}
	e.T.Fatalf("condition never held; lease is %s", l.State())
}

// Recorder keeps every transition a session reports.
type Recorder struct {
	mu  sync.Mutex
	log []string
}

// Add is a client.Options.OnTransition.
func (r *Recorder) Add(lease string, from, to client.LeaseState, ev client.LeaseEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log, fmt.Sprintf("%s -%s-> %s", from, ev, to))
}

// Lines returns the transitions so far.
func (r *Recorder) Lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.log...)
}

// Compact drops the HELD→RENEWING→HELD cycles of routine renewals.
func Compact(lines []string) []string {
	var out []string
	for _, l := range lines {
		if l == "HELD -RenewDue-> RENEWING" || l == "RENEWING -RenewOK-> HELD" {
			continue
		}
		out = append(out, l)
	}
	return out
}

// CallsOf returns the calls of one operation.
func (l *Lossy) CallsOf(op string) []Call {
	var out []Call
	for _, c := range l.Calls() {
		if c.Op == op {
			out = append(out, c)
		}
	}
	return out
}

// ResourceDB is a real gate on a SQLite file with one business table.
type ResourceDB struct {
	Gate *sqlgate.Gate
	DB   *sql.DB
}

// Resource returns a migrated gate on a fresh SQLite file trusting Reg.
func (e *Env) Resource() *ResourceDB {
	e.T.Helper()
	db, err := sqlgate.OpenSQLite(filepath.Join(e.T.TempDir(), "resource.db"), "NORMAL")
	if err != nil {
		e.T.Fatal(err)
	}
	e.T.Cleanup(func() { db.Close() })
	g, err := sqlgate.New(sqlgate.Config{Dialect: sqlgate.SQLite, Policy: gate.Policy{Verifier: e.Reg.Verifier}, Clock: e.Clock})
	if err != nil {
		e.T.Fatal(err)
	}
	if err := g.Migrate(e.Ctx, db); err != nil {
		e.T.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE ledger (seg TEXT PRIMARY KEY, body TEXT NOT NULL)"); err != nil {
		e.T.Fatal(err)
	}
	return &ResourceDB{Gate: g, DB: db}
}

// Write applies m as caller, inserting one ledger row under the gate.
func (r *ResourceDB) Write(ctx context.Context, caller string, m gate.Mutation, body string) (gate.Receipt, error) {
	return r.Gate.Run(ctx, r.DB, caller, &m, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO ledger (seg, body) VALUES (?, ?)",
			fmt.Sprintf("%d/%d", m.FenceToken, m.SegmentSeq), body)
		return err
	})
}

// Rows counts the ledger rows.
func (r *ResourceDB) Rows(t testing.TB) int {
	var n int
	if err := r.DB.QueryRow("SELECT count(*) FROM ledger").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Resolver returns a resolver over res's receipts with a fresh queue file.
func (e *Env) Resolver(res *ResourceDB, onAlarm func(reconcile.Item)) *client.Resolver {
	q, err := reconcile.Open(e.Ctx, filepath.Join(e.T.TempDir(), "reconcile.db"), reconcile.Options{Clock: e.Clock, OnAlarm: onAlarm})
	if err != nil {
		e.T.Fatal(err)
	}
	e.T.Cleanup(func() { q.Close() })
	return &client.Resolver{Queue: q, Receipts: client.ReceiptQuerierFunc(
		func(ctx context.Context, r, op string, fence uint64) (gate.Answer, error) {
			return res.Gate.QueryOperation(ctx, res.DB, r, op, fence)
		})}
}
