// This file proves the crash story with a real process: a worker process
// dequeues a job, applies it and is killed with SIGKILL before River hears
// of it; River's own rescuer, in another client, finds the job stuck in
// "running" and runs it again, and the re-run is REPLAYED: the effect is
// in the target once, on SQLite and PostgreSQL.
package riverhop_test

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/fencegate/fencegate/downstream"
	"github.com/fencegate/fencegate/downstream/riverhop"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/sqlgate"
	"github.com/fencegate/fencegate/internal/childproc"
	"github.com/fencegate/fencegate/testkit/clienttest"
	"github.com/fencegate/fencegate/testkit/fakeclock"
)

// The child is this test binary run with childEnv="<backend> <dsn>".
const childEnv = "FENCEGATE_RIVERHOP_CHILD"

// effectsDDL logs every application of a job's effect: a second row for
// one job is a duplicate effect.
const effectsDDL = `CREATE TABLE effects (job TEXT NOT NULL, pid INTEGER NOT NULL)`

func logEffect(ctx context.Context, tx *sql.Tx, b backend, j *gate.Job) error {
	q := `INSERT INTO effects (job, pid) VALUES ($1, $2)`
	if b.dialect == sqlgate.SQLite {
		q = `INSERT INTO effects (job, pid) VALUES (?, ?)`
	}
	_, err := tx.ExecContext(ctx, q, jobKey(j), os.Getpid())
	return err
}

// dies applies a job, says so, and hangs until it is killed.
type dies struct {
	river.WorkerDefaults[riverhop.Args]
	inner *riverhop.Worker
}

func (d *dies) Work(ctx context.Context, job *river.Job[riverhop.Args]) error {
	if _, err := d.inner.Apply(ctx, job.Args); !gate.IsSuccess(err) {
		return err
	}
	fmt.Printf("APPLIED %d\n", job.ID)
	select {}
}

// runChild is the worker process: a River client that never leads (so no
// leadership of a dead process holds up the rescue) working the queue.
func runChild() int {
	fail := func(err error) int { fmt.Println("CHILD ERROR", err); return 2 }
	name, dsn, _ := strings.Cut(os.Getenv(childEnv), " ")
	var b backend
	for _, c := range backends {
		if c.name == name {
			b = c
		}
	}
	ctx := context.Background()
	db, err := openDSN(b, dsn)
	if err != nil {
		return fail(err)
	}
	reg, err := clienttest.NewRegistry(fakeclock.New(clienttest.T0), nil, nil) // the fixture's key: its verifier
	if err != nil {
		return fail(err)
	}
	g, err := sqlgate.New(sqlgate.Config{Dialect: b.dialect, Policy: gate.Policy{Verifier: reg.Verifier}})
	if err != nil {
		return fail(err)
	}
	if err := g.Migrate(ctx, db); err != nil {
		return fail(err)
	}
	inner := &riverhop.Worker{Applier: downstream.Applier{Gate: g, DB: db, Handlers: map[string]downstream.Handler{hop: func(ctx context.Context, tx *sql.Tx, j *gate.Job, p []byte) error {
		if err := logEffect(ctx, tx, b, j); err != nil {
			return err
		}
		return mirrorWrite(ctx, tx, b, j, p)
	}}}}
	ws := river.NewWorkers()
	river.AddWorker(ws, &dies{inner: inner})
	cfg := riverConfig(ws)
	cfg.LeaderElectionDisabled = true
	c, err := river.NewClient(b.driver(db), cfg)
	if err != nil {
		return fail(err)
	}
	if err := c.Start(ctx); err != nil {
		return fail(err)
	}
	select {}
}

func openDSN(b backend, dsn string) (*sql.DB, error) {
	if b.dialect == sqlgate.SQLite {
		return sqlgate.OpenSQLite(dsn, "NORMAL")
	}
	return sql.Open("pgx", dsn)
}

func TestKilledWorkerProcessRescuedIntoReplayed(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			w := newWorld(t, b, false)
			dsn := w.upDSN
			w.exec(w.up, effectsDDL)
			la, err := w.reg.Acquire(w.ctx, w.reg.Worker(clienttest.OwnerA, 1, true), clienttest.Request("settle-a"))
			if err != nil {
				t.Fatal(err)
			}
			w.write(la, clienttest.OwnerA, 1, "total", "100")

			child := exec.Command(os.Args[0], "-test.run=^$")
			child.Env = append(os.Environ(), childEnv+"="+b.name+" "+dsn)
			child.SysProcAttr = childproc.SysProcAttr()
			out, err := child.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := child.Start(); err != nil {
				t.Fatal(err)
			}
			var jobID int64
			lines := bufio.NewScanner(out)
			deadline := time.AfterFunc(wait, func() { child.Process.Kill() })
			for jobID == 0 && lines.Scan() {
				fmt.Sscanf(lines.Text(), "APPLIED %d", &jobID)
			}
			deadline.Stop()
			child.Process.Kill() // the worker dies after the apply, before River hears of it
			child.Wait()
			if jobID == 0 {
				t.Fatalf("the child never applied the job (last line %q)", lines.Text())
			}
			row, err := w.outbox.Client.JobGet(w.ctx, jobID)
			if err != nil || row.State != rivertype.JobStateRunning {
				t.Fatalf("job after the kill: %v %v, want still running", row, err)
			}

			// The rescuer looks once when its client starts leading, then
			// every 30 s: start it once the job is past the stuck horizon.
			const rescueAfter = 300 * time.Millisecond
			time.Sleep(time.Until(row.AttemptedAt.Add(2 * rescueAfter)))
			calls := map[string]int{}
			events, _ := w.startRiver(w.worker(calls), func(c *river.Config) {
				c.JobTimeout, c.RescueStuckJobsAfter = rescueAfter/3, rescueAfter
			})
			ev := w.awaitEvents(events, river.EventKindJobCompleted, 1)[0]
			w.mu.Lock()
			defer w.mu.Unlock()
			if ev.Job.ID != jobID || ev.Job.Attempt != 2 || calls["1/1"] != 0 {
				t.Fatalf("rescued job %d at attempt %d, handler calls %d; want job %d at attempt 2, no call", ev.Job.ID, ev.Job.Attempt, calls["1/1"], jobID)
			}
			if o := w.outcomes["1/1"]; len(o) != 1 || o[0] != gate.Replayed {
				t.Fatalf("the re-run's outcomes %v, want REPLAYED", o)
			}
			var n int
			if err := w.up.QueryRowContext(w.ctx, `SELECT count(*) FROM effects`).Scan(&n); err != nil || n != 1 {
				t.Fatalf("%d effects (%v), want 1", n, err)
			}
		})
	}
}
