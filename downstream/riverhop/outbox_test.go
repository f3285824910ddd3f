// This file proves the outbox's transactional edges on SQLite and
// PostgreSQL: a write whose business function fails after enqueueing
// leaves no job and no job number behind, and a job cannot be enqueued
// outside an accepting business function — shadow mode letting a
// rejected write through included.
package riverhop_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/fencegate/fencegate/downstream"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/sqlgate"
	"github.com/fencegate/fencegate/testkit/clienttest"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

func TestOutboxIsTransactional(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			w := newWorld(t, b, false)
			la, err := w.reg.Acquire(w.ctx, w.reg.Worker(clienttest.OwnerA, 1, true), clienttest.Request("settle-a"))
			if err != nil {
				t.Fatal(err)
			}
			m, err := la.Envelope(1, gatetest.Payload("p"))
			if err != nil {
				t.Fatal(err)
			}
			boom := errors.New("business change failed after the enqueue")
			_, err = w.upGate.Run(w.ctx, w.up, clienttest.OwnerA, &m, func(ctx context.Context, tx *sql.Tx) error {
				if _, _, err := w.outbox.InsertTx(ctx, tx, hop, []byte("total 1"), nil); err != nil {
					return err
				}
				return boom
			})
			if !errors.Is(err, boom) {
				t.Fatalf("failed write: %v", err)
			}
			if n := w.jobCount(); n != 0 {
				t.Fatalf("%d River jobs after a rolled-back write, want 0", n)
			}
			var j *gate.Job
			_, err = w.upGate.Run(w.ctx, w.up, clienttest.OwnerA, &m, func(ctx context.Context, tx *sql.Tx) error {
				j, _, err = w.outbox.InsertTx(ctx, tx, hop, []byte("total 1"), nil)
				return err
			})
			if err != nil || j.JobSeq != 1 {
				t.Fatalf("retried write: job %+v, %v; want job 1 (the rolled-back number returned)", j, err)
			}
			tx, err := w.up.BeginTx(w.ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			if _, _, err := w.outbox.InsertTx(w.ctx, tx, hop, []byte("x"), nil); !errors.Is(err, downstream.ErrNotAccepting) {
				t.Fatalf("enqueue outside an accept: %v, want ErrNotAccepting", err)
			}
		})
	}
}

func TestShadowLetThroughEnqueuesNothing(t *testing.T) {
	w := newWorld(t, backends[0], false)
	if err := w.upGate.SetMode(w.ctx, w.up, clienttest.Resource, gate.ModeShadow, "operator"); err != nil {
		t.Fatal(err)
	}
	la, err := w.reg.Acquire(w.ctx, w.reg.Worker(clienttest.OwnerA, 1, true), clienttest.Request("settle-a"))
	if err != nil {
		t.Fatal(err)
	}
	stale, err := la.Envelope(1, gatetest.Payload("a"))
	if err != nil {
		t.Fatal(err)
	}
	w.reg.Clock.Advance(ttl + 2*time.Second)
	lb, err := w.reg.Acquire(w.ctx, w.reg.Worker(clienttest.OwnerB, 2, true), clienttest.Request("settle-b"))
	if err != nil {
		t.Fatal(err)
	}
	w.write(lb, clienttest.OwnerB, 1, "total", "200") // accepted: one job
	var enqueueErr error
	r, err := w.upGate.Run(w.ctx, w.up, clienttest.OwnerA, &stale, func(ctx context.Context, tx *sql.Tx) error {
		_, _, enqueueErr = w.outbox.InsertTx(ctx, tx, hop, []byte("total 100"), nil)
		return nil
	})
	if err != nil || r.Outcome != gate.StaleOwner {
		t.Fatalf("shadow mode must let the stale write through: %+v %v", r, err)
	}
	if !errors.Is(enqueueErr, downstream.ErrNotAccepting) || w.jobCount() != 1 {
		t.Fatalf("enqueue under a shadowed rejection: %v, %d jobs; want ErrNotAccepting and B's job only", enqueueErr, w.jobCount())
	}
}

func (w *world) jobCount() int {
	w.t.Helper()
	q := `SELECT count(*) FROM river_job WHERE state != $1`
	if w.b.dialect == sqlgate.SQLite {
		q = `SELECT count(*) FROM river_job WHERE state != ?`
	}
	var n int
	if err := w.up.QueryRowContext(w.ctx, q, string(rivertype.JobStateCancelled)).Scan(&n); err != nil {
		w.t.Fatal(err)
	}
	return n
}
