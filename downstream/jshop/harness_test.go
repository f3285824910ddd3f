// This file sets up the JetStream tests on each database: a real registry
// (memory store, fake clock), an upstream service (gate, River relaying
// fenced jobs), an embedded NATS server with JetStream on loopback, and a
// downstream service (its own database and gate) consuming the stream.
package jshop_test

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

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/downstream"
	"github.com/fencegate/fencegate/downstream/jshop"
	"github.com/fencegate/fencegate/downstream/riverhop"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/sqlgate"
	"github.com/fencegate/fencegate/testkit/clienttest"
	"github.com/fencegate/fencegate/testkit/gatetest"
	"github.com/fencegate/fencegate/testkit/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

const (
	hop  = "mirror"
	wait = 20 * time.Second
)

type backend struct {
	name    string
	dialect *sqlgate.Dialect
	open    func(t testing.TB) *sql.DB
	driver  func(db *sql.DB) riverdriver.Driver[*sql.Tx]
	upsert  string // mirror/ledger upsert: table, then k, v, writer, fence
}

var backends = []backend{
	{"sqlite", sqlgate.SQLite, func(t testing.TB) *sql.DB {
		db, err := sqlgate.OpenSQLite(filepath.Join(t.TempDir(), "db.sqlite"), "NORMAL")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}, func(db *sql.DB) riverdriver.Driver[*sql.Tx] { return riversqlite.New(db) },
		`INSERT INTO %s (k, v, writer, fence) VALUES (?, ?, ?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v, writer = excluded.writer, fence = excluded.fence`},
	{"postgres", sqlgate.Postgres, func(t testing.TB) *sql.DB {
		db, err := sql.Open("pgx", pgtest.WithParam(pgtest.NewDatabase(t), "synchronous_commit", "off"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}, func(db *sql.DB) riverdriver.Driver[*sql.Tx] { return riverdatabasesql.New(db) },
		`INSERT INTO %s (k, v, writer, fence) VALUES ($1, $2, $3, $4) ON CONFLICT (k) DO UPDATE SET v = excluded.v, writer = excluded.writer, fence = excluded.fence`},
}

// env is one test's two services, registry and JetStream.
type env struct {
	t                *testing.T
	ctx              context.Context
	b                backend
	reg              *clienttest.Env
	up, down         *sql.DB
	upGate, downGate *sqlgate.Gate
	outbox           *riverhop.Outbox
	relay            *jshop.Relay
	js               jetstream.JetStream
	consumer         *jshop.Consumer
	mu               sync.Mutex
	outcomes         map[string][]gate.Outcome // by job "fence/jobSeq"
	calls            map[string]int
}

func newEnv(t *testing.T, b backend) *env {
	e := &env{t: t, ctx: context.Background(), b: b, reg: clienttest.NewEnv(t, nil),
		outcomes: map[string][]gate.Outcome{}, calls: map[string]int{}}
	e.up, e.down = b.open(t), b.open(t)
	e.upGate, e.downGate = e.newGate(e.up), e.newGate(e.down)
	e.exec(e.up, `CREATE TABLE ledger (k TEXT PRIMARY KEY, v TEXT NOT NULL, writer TEXT NOT NULL, fence BIGINT NOT NULL)`)
	e.exec(e.down, `CREATE TABLE mirror (k TEXT PRIMARY KEY, v TEXT NOT NULL, writer TEXT NOT NULL, fence BIGINT NOT NULL)`)
	e.js = startJetStream(t)
	if _, err := e.js.CreateStream(e.ctx, jetstream.StreamConfig{Name: "FENCEGATE_JOBS", Subjects: []string{jshop.SubjectPrefix + ">"}, Duplicates: 2 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	e.startRelay()
	e.consumer = &jshop.Consumer{GapDelay: 20 * time.Millisecond, Applier: downstream.Applier{
		Gate: e.downGate, DB: e.down, Upstream: sqlgate.ReceiptsOf(e.upGate, e.up),
		Handlers: map[string]downstream.Handler{hop: func(ctx context.Context, tx *sql.Tx, j *gate.Job, p []byte) error {
			e.mu.Lock()
			e.calls[key(j)]++
			e.mu.Unlock()
			var k, v string
			if _, err := fmt.Sscanf(string(p), "%s %s", &k, &v); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, fmt.Sprintf(b.upsert, "mirror"), k, v, j.OperationID, int64(j.FenceToken))
			return err
		}},
		OnOutcome: func(j *gate.Job, o gate.Outcome, err error) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.outcomes[key(j)] = append(e.outcomes[key(j)], o)
		},
	}}
	return e
}

func key(j *gate.Job) string { return fmt.Sprintf("%d/%d", j.FenceToken, j.JobSeq) }

func (e *env) newGate(db *sql.DB) *sqlgate.Gate {
	g, err := sqlgate.New(sqlgate.Config{Dialect: e.b.dialect, Policy: gate.Policy{Verifier: e.reg.Reg.Verifier}, Clock: e.reg.Clock})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := g.Migrate(e.ctx, db); err != nil {
		e.t.Fatal(err)
	}
	return g
}

func (e *env) exec(db *sql.DB, q string) {
	if _, err := db.ExecContext(e.ctx, q); err != nil {
		e.t.Fatalf("%s: %v", q, err)
	}
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// startJetStream runs an embedded NATS server with JetStream on loopback.
func startJetStream(t *testing.T) jetstream.JetStream {
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	t.Cleanup(ns.Shutdown)
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// startRelay migrates River on the upstream database and starts the
// client whose worker of fenced jobs is the JetStream relay.
func (e *env) startRelay() {
	drv := e.b.driver(e.up)
	m, err := rivermigrate.New(drv, &rivermigrate.Config{Logger: quiet()})
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := m.Migrate(e.ctx, rivermigrate.DirectionUp, nil); err != nil {
		e.t.Fatal(err)
	}
	seq, err := downstream.NewSequencer(e.b.dialect, "")
	if err != nil {
		e.t.Fatal(err)
	}
	if err := seq.Migrate(e.ctx, e.up); err != nil {
		e.t.Fatal(err)
	}
	e.relay = &jshop.Relay{JS: e.js}
	ws := river.NewWorkers()
	river.AddWorker(ws, e.relay)
	c, err := river.NewClient(drv, &river.Config{Queues: map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 4}}, Workers: ws,
		FetchPollInterval: 20 * time.Millisecond, FetchCooldown: 5 * time.Millisecond, PollOnly: true, Logger: quiet()})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := c.Start(e.ctx); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		c.StopAndCancel(ctx)
	})
	e.outbox = &riverhop.Outbox{Client: c, Seq: seq}
}

// consume starts a durable explicit-ack consumer calling handle.
func (e *env) consume(ackWait time.Duration, handle jetstream.MessageHandler) {
	cons, err := e.js.CreateOrUpdateConsumer(e.ctx, "FENCEGATE_JOBS", jetstream.ConsumerConfig{
		Durable: hop, AckPolicy: jetstream.AckExplicitPolicy, AckWait: ackWait, FilterSubject: jshop.Subject(hop)})
	if err != nil {
		e.t.Fatal(err)
	}
	cc, err := cons.Consume(handle)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(cc.Stop)
}

// write is one upstream segment under l: ledger[k] = v, and a job that
// mirrors it.
func (e *env) write(l *client.Lease, owner string, seq uint64, k, v string) {
	e.t.Helper()
	m, err := l.Envelope(seq, gatetest.Payload(k+"="+v))
	if err != nil {
		e.t.Fatal(err)
	}
	_, err = e.upGate.Run(e.ctx, e.up, owner, &m, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, fmt.Sprintf(e.b.upsert, "ledger"), k, v, m.OperationID, int64(m.FenceToken)); err != nil {
			return err
		}
		_, _, err := e.outbox.InsertTx(ctx, tx, hop, []byte(k+" "+v), nil)
		return err
	})
	if err != nil {
		e.t.Fatalf("%s's segment %d: %v", owner, seq, err)
	}
}

// waitOutcomes waits until every job named has had its last outcome in want.
func (e *env) waitOutcomes(want gate.Outcome, jobs ...string) {
	e.t.Helper()
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		e.mu.Lock()
		all := true
		for _, j := range jobs {
			o := e.outcomes[j]
			all = all && len(o) > 0 && o[len(o)-1] == want
		}
		e.mu.Unlock()
		if all {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.t.Fatalf("jobs %v never reached %s: %v", jobs, want, e.outcomes)
}

func (e *env) mirror() map[string]string {
	rows, err := e.down.QueryContext(e.ctx, `SELECT k, v, writer FROM mirror`)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, v, w string
		if err := rows.Scan(&k, &v, &w); err != nil {
			e.t.Fatal(err)
		}
		out[k] = v + " by " + w
	}
	return out
}
