// This file measures the gate inside PostgreSQL against its three peers
// on one database, op by op: the plain write, the fence a user writes by
// hand, and sqlgate.RunPgx (the Go gate through pgx). Each iteration does
// one of each, in an order that rotates, so all four see the same load on
// a shared machine; it reports medians and ratios, nothing is asserted.
// Run:
//
//	go test ./gate/pggate -run '^$' -bench 'ApplyPaired' -benchtime 1500x
package pggate_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/pggate"
	"github.com/fencegate/fencegate/gate/sqlgate"
	"github.com/fencegate/fencegate/testkit/benchpair"
	"github.com/fencegate/fencegate/testkit/fakeclock"
	"github.com/fencegate/fencegate/testkit/gatetest"
	"github.com/fencegate/fencegate/testkit/pgtest"
)

// benchOwner is the workload identity of every benchmark grant; the
// connecting role is mapped to it, so apply runs as the caller directly.
const benchOwner = "bench-worker"

// The peers' SQL: sqlgate's WritePaired statements, on the same ledger.
const (
	ledgerDDL    = `CREATE TABLE ledger (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, resource TEXT NOT NULL, fence BIGINT NOT NULL, seq BIGINT NOT NULL, payload TEXT NOT NULL)`
	ledgerInsert = `INSERT INTO ledger (resource, fence, seq, payload) VALUES ($1, $2, $3, $4)`
	fenceDDL     = `CREATE TABLE fence (resource TEXT PRIMARY KEY, token BIGINT NOT NULL)`
	handFenceSQL = `UPDATE fence SET token = $1 WHERE resource = $2 AND token <= $1`
	applySQL     = `SELECT fencegate.apply($1, $2)`
)

var errFenced = errors.New("hand-rolled fence: a newer token was seen")

// pairedEnv is one database holding both gates' schemas, the ledger and
// the hand-rolled fence table, and one pgx connection for all four writes.
type pairedEnv struct {
	ctx  context.Context
	conn *pgx.Conn
	sg   *sqlgate.Gate
	iss  *gatetest.Issuer
}

func newPairedEnv(b *testing.B, syncCommit string) *pairedEnv {
	ctx := context.Background()
	dsn := pgtest.WithParam(pgtest.NewDatabase(b), "synchronous_commit", syncCommit)
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	iss := gatetest.NewIssuer("bench")
	clock := fakeclock.New(iss.Now.Add(time.Second))
	sg, err := sqlgate.New(sqlgate.Config{Dialect: sqlgate.Postgres, Policy: gate.Policy{Verifier: iss.Verifier}, Clock: clock})
	if err != nil {
		b.Fatal(err)
	}
	if err := sg.Migrate(ctx, db); err != nil {
		b.Fatal(err)
	}
	if _, err := pggate.Install(ctx, db); err != nil {
		b.Fatal(err)
	}
	w := &world{db: db, roles: map[string]string{}}
	if err := w.mirror(ctx, iss.Verifier.Bundle()); err != nil {
		b.Fatal(err)
	}
	for _, q := range []string{ledgerDDL, fenceDDL, `INSERT INTO fence VALUES ('bench/hand', 0)`} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := db.ExecContext(ctx, `SELECT fencegate.map_caller(current_user, $1)`, benchOwner); err != nil {
		b.Fatal(err)
	}
	if err := pggate.SetClock(ctx, db, clock.Now()); err != nil {
		b.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close(ctx) })
	return &pairedEnv{ctx: ctx, conn: conn, sg: sg, iss: iss}
}

// segments returns segments 1..n of one operation under one grant on
// resource, every one accepted in turn.
func (e *pairedEnv) segments(resource string, n int) []*gate.Mutation {
	base := e.iss.Mutation(gatetest.Writer{Resource: resource, Owner: benchOwner, Lease: "l-" + resource[6:], OperationID: "op-bench", Fence: 5}, 1, "x")
	out := make([]*gate.Mutation, n)
	for i := range out {
		m := *base
		m.SegmentSeq = uint64(i + 1)
		out[i] = &m
	}
	return out
}

// tx runs stmts and the ledger insert for m in one pgx transaction, one
// round trip each, as a pgx (or psycopg, or JDBC) user writes it.
func (e *pairedEnv) tx(m *gate.Mutation, before func(pgx.Tx) error) error {
	tx, err := e.conn.Begin(e.ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(e.ctx)
	if before != nil {
		if err := before(tx); err != nil {
			return err
		}
	}
	if _, err := tx.Exec(e.ctx, ledgerInsert, m.Resource, int64(m.FenceToken), int64(m.SegmentSeq), "x"); err != nil {
		return err
	}
	return tx.Commit(e.ctx)
}

func (e *pairedEnv) plain(m *gate.Mutation) error { return e.tx(m, nil) }

func (e *pairedEnv) hand(m *gate.Mutation) error {
	return e.tx(m, func(tx pgx.Tx) error {
		tag, err := tx.Exec(e.ctx, handFenceSQL, int64(m.FenceToken), m.Resource)
		if err == nil && tag.RowsAffected() != 1 {
			err = errFenced
		}
		return err
	})
}

func (e *pairedEnv) runPgx(m *gate.Mutation) error {
	_, err := e.sg.RunPgx(e.ctx, e.conn, benchOwner, m, func(ctx context.Context, q sqlgate.PgxQuerier) error {
		_, err := q.Exec(ctx, ledgerInsert, m.Resource, int64(m.FenceToken), int64(m.SegmentSeq), "x")
		return err
	})
	return err
}

// apply is the SQL gate as any client calls it: BEGIN, SELECT
// fencegate.apply(envelope, payload digest), the business INSERT, COMMIT.
// env is the envelope's JSON, encoded before the clock starts (a client
// in another language receives it as text from `fencegate lock`).
func (e *pairedEnv) apply(m *gate.Mutation, env string) error {
	return e.tx(m, func(tx pgx.Tx) error {
		var rc string
		return tx.QueryRow(e.ctx, applySQL, env, m.PayloadDigest.String()).Scan(&rc)
	})
}

// BenchmarkApplyPaired is sqlgate's WritePairedPgx with a fourth writer,
// fencegate.apply, on the same pgx connection: plain-µs, fence-µs (the
// hand-rolled fence), runpgx-µs (sqlgate.RunPgx) and apply-µs, and the
// ratios of apply to each.
func BenchmarkApplyPaired(b *testing.B) {
	for _, on := range []string{"on", "off"} {
		b.Run("postgres-sync-"+on, func(b *testing.B) {
			e := newPairedEnv(b, on)
			plain, hand := e.segments("bench/plain", b.N), e.segments("bench/hand", b.N)
			viaGo, viaSQL := e.segments("bench/runpgx", b.N), e.segments("bench/apply", b.N)
			envs := make([]string, b.N)
			for i, m := range viaSQL {
				j, err := macProofs(m, e.iss.Verifier.Bundle()).MarshalJSON()
				if err != nil {
					b.Fatal(err)
				}
				envs[i] = string(j)
			}
			benchpair.Run(b,
				benchpair.Lane{Name: "plain", Write: func(i int) error { return e.plain(plain[i]) }},
				benchpair.Lane{Name: "fence", Write: func(i int) error { return e.hand(hand[i]) }},
				benchpair.Lane{Name: "runpgx", Write: func(i int) error { return e.runPgx(viaGo[i]) }},
				benchpair.Lane{Name: "apply", Write: func(i int) error { return e.apply(viaSQL[i], envs[i]) }})
		})
	}
}
