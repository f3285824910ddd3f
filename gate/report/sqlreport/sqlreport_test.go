// Proves the SQL source on SQLite and PostgreSQL: a report lists paused
// resources first, then the recently written, with the alarm and
// quarantine counts, the last rows and the last operator action as the
// gate recorded them; the resume goes through the gate's own rule and
// record; and on SQLite the reader answers while a writer holds the
// database's write lock (a report never waits for, or holds up, a write).
package sqlreport_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/report"
	"github.com/fencegate/fencegate/gate/report/sqlreport"
	"github.com/fencegate/fencegate/gate/sqlgate"
	"github.com/fencegate/fencegate/testkit/fakeclock"
	"github.com/fencegate/fencegate/testkit/gatetest"
	"github.com/fencegate/fencegate/testkit/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

const (
	paused = "invoice-batch/paused"
	busy   = "invoice-batch/busy"
	quiet  = "invoice-batch/a-quiet"
)

type env struct {
	ctx  context.Context
	db   *sql.DB
	g    *sqlgate.Gate
	iss  *gatetest.Issuer
	path string // SQLite only
}

func newEnv(t *testing.T, d *sqlgate.Dialect) *env {
	e := &env{ctx: context.Background(), iss: gatetest.NewIssuer("main")}
	var err error
	if d == sqlgate.SQLite {
		e.path = filepath.Join(t.TempDir(), "gate.db")
		e.db, err = sqlgate.OpenSQLite(e.path, "NORMAL")
	} else {
		e.db, err = sql.Open("pgx", pgtest.NewDatabase(t))
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.db.Close() })
	e.g, err = sqlgate.New(sqlgate.Config{Dialect: d, Policy: gate.Policy{Verifier: e.iss.Verifier}, Clock: fakeclock.New(gatetest.T0.Add(time.Second))})
	if err == nil {
		err = e.g.Migrate(e.ctx, e.db)
	}
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) write(t *testing.T, w gatetest.Writer, seq uint64, payload string) error {
	t.Helper()
	_, err := e.g.Run(e.ctx, e.db, w.Owner, e.iss.Mutation(w, seq, payload), func(context.Context, *sql.Tx) error { return nil })
	return err
}

// story leaves one resource paused by two grants at fence 2, one with a
// quarantined segment, and one written once.
func (e *env) story(t *testing.T) {
	w := func(res, lease string, fence uint64) gatetest.Writer {
		return gatetest.Writer{Resource: res, Owner: "worker-1", Lease: lease, OperationID: "op-" + lease, Fence: fence}
	}
	for _, step := range []struct {
		w       gatetest.Writer
		payload string
		want    error
	}{
		{w(paused, "l2", 2), "a", nil},
		{w(paused, "l2-again", 2), "b", gate.ErrFenceRegression},
		{w(busy, "l1", 1), "a", nil},
		{w(busy, "l1", 1), "other payload", gate.ErrQuarantined},
		{w(quiet, "l1", 1), "a", nil},
	} {
		if err := e.write(t, step.w, 1, step.payload); !errors.Is(err, step.want) && !(step.want == nil && err == nil) {
			t.Fatalf("%s %s: %v, want %v", step.w.Resource, step.w.Lease, err, step.want)
		}
	}
	if err := e.g.SetMinPolicyGeneration(e.ctx, e.db, busy, 1, "alice"); err != nil {
		t.Fatal(err)
	}
}

func testSource(t *testing.T, d *sqlgate.Dialect) {
	e := newEnv(t, d)
	e.story(t)
	read := e.db
	if d == sqlgate.SQLite {
		rd, err := sqlgate.OpenSQLiteReader(e.path)
		if err != nil {
			t.Fatal(err)
		}
		defer rd.Close()
		read = rd
	}
	src := &sqlreport.Gate{Gate: e.g, Read: read, Write: e.db}
	views, total, err := src.Resources(e.ctx, []string{busy}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if total != 3 || len(views) != 2 || views[0].Resource != paused || views[1].Resource != busy {
		t.Fatalf("got %d of %d: %+v, want paused then the recent one", len(views), total, views)
	}
	p, b := views[0], views[1]
	if !p.Paused || p.HighestFence != 2 || p.Alarms != 1 || len(p.Recent) != 1 || p.Recent[0].Kind != "FENCE_REGRESSION" || !strings.Contains(p.PausedReason, "FENCE_REGRESSION") {
		t.Errorf("paused resource: %+v", p)
	}
	if b.Paused || b.Quarantined != 1 || len(b.Recent) != 1 || b.Recent[0].Kind != "QUARANTINED" || b.LastAction == nil || b.LastAction.Operator != "alice" {
		t.Errorf("busy resource: %+v (last action %+v)", b, b.LastAction)
	}
	if err := src.Resume(e.ctx, paused, 2, "ops-admin", "too low"); !errors.Is(err, gate.ErrResumeRefused) {
		t.Fatalf("resume at highestFence: %v, want refused", err)
	}
	if err := src.Resume(e.ctx, paused, 3, "ops-admin", "INC-42"); err != nil {
		t.Fatal(err)
	}
	views, _, err = src.Resources(e.ctx, nil, report.ResourcesPerReportMax)
	if err != nil {
		t.Fatal(err)
	}
	if views[0].Resource != quiet || views[2].Resource != paused || views[2].Paused || views[2].Floor != 3 ||
		views[2].LastAction == nil || views[2].LastAction.Action != "resume" || views[2].LastAction.Operator != "ops-admin" {
		t.Errorf("after the resume: %+v", views)
	}
}

func TestSourceSQLite(t *testing.T)   { testSource(t, sqlgate.SQLite) }
func TestSourcePostgres(t *testing.T) { testSource(t, sqlgate.Postgres) }

func TestSQLiteReaderDoesNotWaitForTheWriter(t *testing.T) {
	e := newEnv(t, sqlgate.SQLite)
	e.story(t)
	rd, err := sqlgate.OpenSQLiteReader(e.path)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	tx, err := e.db.BeginTx(e.ctx, nil) // takes the write lock (BEGIN IMMEDIATE) and the writers' one connection
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(e.ctx, `UPDATE fencegate_resources SET mode = mode`); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(e.ctx, 2*time.Second)
	defer cancel()
	src := &sqlreport.Gate{Gate: e.g, Read: rd}
	if _, total, err := src.Resources(ctx, nil, 10); err != nil || total != 3 {
		t.Fatalf("reader during a write: %d resources, %v", total, err)
	}
	// Negative control: the same read through the writers' handle waits
	// for the open transaction.
	through := &sqlreport.Gate{Gate: e.g, Read: e.db}
	short, cancelShort := context.WithTimeout(e.ctx, 200*time.Millisecond)
	defer cancelShort()
	if _, _, err := through.Resources(short, nil, 10); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("reading through the writers' handle during a write: %v, want to wait (deadline exceeded)", err)
	}
}
