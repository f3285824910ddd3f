// This file sets up the hand-off tests on each database: a real registry
// (memory store, fake clock), an upstream gate, River on the upstream
// database, and a target that shares the upstream database or has one of
// its own.
package riverhop_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"

	"github.com/fencegate/fencegate/downstream"
	"github.com/fencegate/fencegate/downstream/riverhop"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/sqlgate"
	"github.com/fencegate/fencegate/testkit/clienttest"
	"github.com/fencegate/fencegate/testkit/pgtest"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(runChild())
	}
	os.Exit(pgtest.Main(m))
}

// backend makes fresh databases of one kind and River drivers over them.
type backend struct {
	name    string
	dialect *sqlgate.Dialect
	dsn     func(t testing.TB) string // a fresh, empty database
	driver  func(db *sql.DB) riverdriver.Driver[*sql.Tx]
}

var backends = []backend{
	{"sqlite", sqlgate.SQLite, func(t testing.TB) string { return filepath.Join(t.TempDir(), "db.sqlite") },
		func(db *sql.DB) riverdriver.Driver[*sql.Tx] { return riversqlite.New(db) }},
	{"postgres", sqlgate.Postgres, func(t testing.TB) string {
		return pgtest.WithParam(pgtest.NewDatabase(t), "synchronous_commit", "off")
	}, func(db *sql.DB) riverdriver.Driver[*sql.Tx] { return riverdatabasesql.New(db) }},
}

// open opens dsn, closing it when t ends.
func (b backend) open(t testing.TB, dsn string) *sql.DB {
	db, err := openDSN(b, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// forEachLayout runs fn on each backend, with the target in the upstream
// database and in a database of its own.
func forEachLayout(t *testing.T, fn func(t *testing.T, w *world)) {
	for _, b := range backends {
		for _, separate := range []bool{false, true} {
			name := b.name + "/same-database"
			if separate {
				name = b.name + "/separate-database"
			}
			t.Run(name, func(t *testing.T) { fn(t, newWorld(t, b, separate)) })
		}
	}
}

const (
	hop  = "mirror"
	ttl  = clienttest.TTL
	wait = 20 * time.Second // bound on any one wait for River
)

// world is one test's registry, databases, gates and River pieces.
type world struct {
	t        *testing.T
	ctx      context.Context
	b        backend
	reg      *clienttest.Env
	up, down *sql.DB
	upDSN    string
	upGate   *sqlgate.Gate
	target   *sqlgate.Gate
	upstream gate.UpstreamReceipts // nil when the target shares the upstream database
	driver   riverdriver.Driver[*sql.Tx]
	outbox   *riverhop.Outbox
	mu       sync.Mutex
	outcomes map[string][]gate.Outcome // by job "fence/jobSeq"
}

func newWorld(t *testing.T, b backend, separate bool) *world {
	w := &world{t: t, ctx: context.Background(), b: b, reg: clienttest.NewEnv(t, nil), outcomes: map[string][]gate.Outcome{}}
	w.upDSN = b.dsn(t)
	w.up = b.open(t, w.upDSN)
	w.upGate = w.newGate(w.up)
	w.down, w.target = w.up, w.upGate
	if separate {
		w.down = b.open(t, b.dsn(t))
		w.target = w.newGate(w.down)
		w.upstream = sqlgate.ReceiptsOf(w.upGate, w.up)
	}
	w.exec(w.up, `CREATE TABLE ledger (k TEXT PRIMARY KEY, v TEXT NOT NULL, writer TEXT NOT NULL, fence BIGINT NOT NULL)`)
	w.exec(w.down, `CREATE TABLE mirror (k TEXT PRIMARY KEY, v TEXT NOT NULL, writer TEXT NOT NULL, fence BIGINT NOT NULL)`)
	w.driver = b.driver(w.up)
	m, err := rivermigrate.New(w.driver, &rivermigrate.Config{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Migrate(w.ctx, rivermigrate.DirectionUp, nil); err != nil {
		t.Fatal(err)
	}
	seq, err := downstream.NewSequencer(b.dialect, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := seq.Migrate(w.ctx, w.up); err != nil {
		t.Fatal(err)
	}
	ins, err := river.NewClient(w.driver, &river.Config{Logger: quiet()}) // insert-only
	if err != nil {
		t.Fatal(err)
	}
	w.outbox = &riverhop.Outbox{Client: ins, Seq: seq}
	return w
}

func (w *world) newGate(db *sql.DB) *sqlgate.Gate {
	g, err := sqlgate.New(sqlgate.Config{Dialect: w.b.dialect, Policy: gate.Policy{Verifier: w.reg.Reg.Verifier}, Clock: w.reg.Clock})
	if err != nil {
		w.t.Fatal(err)
	}
	if err := g.Migrate(w.ctx, db); err != nil {
		w.t.Fatal(err)
	}
	return g
}

func (w *world) exec(db *sql.DB, q string, args ...any) {
	w.t.Helper()
	if _, err := db.ExecContext(w.ctx, q, args...); err != nil {
		w.t.Fatalf("%s: %v", q, err)
	}
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// fastRetry retries a failed job at once, so a crash re-runs in the test.
type fastRetry struct{}

func (fastRetry) NextRetry(*rivertype.JobRow) time.Time { return time.Now().Add(10 * time.Millisecond) }

// worker returns the fenced worker whose handler writes the payload
// "key=value" into mirror, counting handler calls in calls.
func (w *world) worker(calls map[string]int) *riverhop.Worker {
	return &riverhop.Worker{GapSnooze: 20 * time.Millisecond, Applier: downstream.Applier{
		Gate: w.target, DB: w.down, Upstream: w.upstream,
		Handlers: map[string]downstream.Handler{hop: func(ctx context.Context, tx *sql.Tx, j *gate.Job, payload []byte) error {
			w.mu.Lock()
			calls[jobKey(j)]++
			w.mu.Unlock()
			return mirrorWrite(ctx, tx, w.b, j, payload)
		}},
		OnOutcome: func(j *gate.Job, o gate.Outcome, err error) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.outcomes[jobKey(j)] = append(w.outcomes[jobKey(j)], o)
		},
	}}
}

func jobKey(j *gate.Job) string { return fmt.Sprintf("%d/%d", j.FenceToken, j.JobSeq) }

// mirrorWrite is a job's effect: upsert mirror[key] = value by the job's
// upstream owner.
func mirrorWrite(ctx context.Context, tx *sql.Tx, b backend, j *gate.Job, payload []byte) error {
	var k, v string
	if _, err := fmt.Sscanf(string(payload), "%s %s", &k, &v); err != nil {
		return err
	}
	q := `INSERT INTO mirror (k, v, writer, fence) VALUES ($1, $2, $3, $4) ON CONFLICT (k) DO UPDATE SET v = excluded.v, writer = excluded.writer, fence = excluded.fence`
	if b.dialect == sqlgate.SQLite {
		q = `INSERT INTO mirror (k, v, writer, fence) VALUES (?, ?, ?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v, writer = excluded.writer, fence = excluded.fence`
	}
	_, err := tx.ExecContext(ctx, q, k, v, j.OperationID, int64(j.FenceToken))
	return err
}

// startRiver starts a River client working the fenced jobs with wk (a
// River worker of Args) and returns a subscription to job events; tune,
// if not nil, adjusts the client's configuration.
func (w *world) startRiver(wk river.Worker[riverhop.Args], tune ...func(*river.Config)) (<-chan *river.Event, *river.Client[*sql.Tx]) {
	ws := river.NewWorkers()
	river.AddWorker(ws, wk)
	cfg := riverConfig(ws)
	for _, f := range tune {
		f(cfg)
	}
	c, err := river.NewClient(w.driver, cfg)
	if err != nil {
		w.t.Fatal(err)
	}
	events, cancel := c.Subscribe(river.EventKindJobCompleted, river.EventKindJobCancelled, river.EventKindJobFailed)
	if err := c.Start(w.ctx); err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() {
		cancel()
		ctx, done := context.WithTimeout(context.Background(), wait)
		defer done()
		c.StopAndCancel(ctx)
	})
	return events, c
}

func riverConfig(ws *river.Workers) *river.Config {
	return &river.Config{
		Queues: map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 6}}, Workers: ws,
		FetchPollInterval: 20 * time.Millisecond, FetchCooldown: 5 * time.Millisecond, PollOnly: true,
		RetryPolicy: fastRetry{}, Logger: quiet(),
	}
}

// awaitEvents collects events until n of kind have arrived.
func (w *world) awaitEvents(events <-chan *river.Event, kind river.EventKind, n int) []*river.Event {
	w.t.Helper()
	var got []*river.Event
	deadline := time.After(wait)
	for len(got) < n {
		select {
		case ev := <-events:
			if ev.Kind == kind {
				got = append(got, ev)
			}
		case <-deadline:
			w.t.Fatalf("%d of %d %s events after %s", len(got), n, kind, wait)
		}
	}
	return got
}
