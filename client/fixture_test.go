// This file holds the fixtures the client tests share: a fake clock, a
// real registry on the memory store behind a lossy network, a real gate on
// SQLite, and a recorder of state transitions.
package client_test

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
	"github.com/fencegate/fencegate/client/clienttest"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/sqlgate"
)

const (
	resource = "invoice-batch/2026-07-19"
	ownerA   = "worker-settlement-7"
	ownerB   = "worker-settlement-8"
	ttl      = 10 * time.Second
)

type fixture struct {
	t     *testing.T
	ctx   context.Context
	clock *clienttest.FakeClock
	reg   *clienttest.Registry
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	clock := clienttest.NewFakeClock()
	reg, err := clienttest.NewRegistry(clock, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, ctx: context.Background(), clock: clock, reg: reg}
}

// worker is one owner's session behind its own lossy network.
type worker struct {
	net *clienttest.Lossy
	s   *client.Session
	rec *recorder
}

func (f *fixture) worker(owner string, seed uint64, manual bool) *worker {
	w := &worker{rec: &recorder{}}
	w.net = &clienttest.Lossy{Inner: client.Direct{Registry: f.reg.Registry, Owner: owner}}
	w.s = client.NewSession(w.net, client.Options{
		Clock: f.clock, Rand: rand.New(rand.NewPCG(seed, seed)), Manual: manual, OnTransition: w.rec.add,
	})
	return w
}

func request(op string) client.AcquireRequest {
	return client.AcquireRequest{Resource: resource, OperationID: op, OperationClass: "settle", TTL: ttl}
}

// acquire runs Session.Acquire while advancing the fake clock whenever
// something sleeps on it, so backoffs pass without real waiting.
func (f *fixture) acquire(ctx context.Context, w *worker, r client.AcquireRequest) (*client.Lease, error) {
	type result struct {
		l   *client.Lease
		err error
	}
	ch := make(chan result, 1)
	go func() {
		l, err := w.s.Acquire(ctx, r)
		ch <- result{l, err}
	}()
	for {
		select {
		case res := <-ch:
			return res.l, res.err
		case <-time.After(200 * time.Microsecond):
			f.clock.Advance(50 * time.Millisecond)
		}
	}
}

// tickUntil advances the clock in steps of d, ticking the lease, until
// cond holds (or a bound of steps passes).
func (f *fixture) tickUntil(l *client.Lease, d time.Duration, cond func() bool) {
	f.t.Helper()
	for i := 0; i < 10000; i++ {
		if cond() {
			return
		}
		f.clock.Advance(d)
		l.Tick(f.ctx)
	}
	f.t.Fatalf("condition never held; lease is %s", l.State())
}

// recorder keeps every transition a session reports.
type recorder struct {
	mu  sync.Mutex
	log []string
}

func (r *recorder) add(lease string, from, to client.State, ev client.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log, fmt.Sprintf("%s -%s-> %s", from, ev, to))
}

func (r *recorder) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.log...)
}

// compact drops the HELD→RENEWING→HELD cycles of routine proof refreshes.
func compact(lines []string) []string {
	var out []string
	for _, l := range lines {
		if l == "HELD -RenewDue-> RENEWING" || l == "RENEWING -RenewOK-> HELD" {
			continue
		}
		out = append(out, l)
	}
	return out
}

func calls(n *clienttest.Lossy, op string) []clienttest.Call {
	var out []clienttest.Call
	for _, c := range n.Calls() {
		if c.Op == op {
			out = append(out, c)
		}
	}
	return out
}

// resourceDB is a real gate on a SQLite file with one business table.
type resourceDB struct {
	g  *sqlgate.Gate
	db *sql.DB
}

func (f *fixture) gate() *resourceDB {
	f.t.Helper()
	db, err := sqlgate.OpenSQLite(filepath.Join(f.t.TempDir(), "resource.db"), "NORMAL")
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { db.Close() })
	g, err := sqlgate.New(sqlgate.Config{Dialect: sqlgate.SQLite, Policy: gate.Policy{Verifier: f.reg.Verifier}, Clock: f.clock})
	if err != nil {
		f.t.Fatal(err)
	}
	if err := g.Migrate(f.ctx, db); err != nil {
		f.t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE ledger (seg TEXT PRIMARY KEY, body TEXT NOT NULL)"); err != nil {
		f.t.Fatal(err)
	}
	return &resourceDB{g: g, db: db}
}

// write applies m as caller, inserting one ledger row under the gate.
func (r *resourceDB) write(ctx context.Context, caller string, m gate.Mutation, body string) (gate.Receipt, error) {
	return r.g.Run(ctx, r.db, caller, &m, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO ledger (seg, body) VALUES (?, ?)",
			fmt.Sprintf("%d/%d", m.FenceToken, m.SegmentSeq), body)
		return err
	})
}

func (r *resourceDB) rows(t *testing.T) int {
	var n int
	if err := r.db.QueryRow("SELECT count(*) FROM ledger").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
