// This file shows the public API end to end on the embedded SQLite: a
// current owner's write is accepted, its lost-ACK retry replayed, and a
// paused stale owner's late write rejected.
package sqlgate_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/sqlgate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

func ExampleGate_Run() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "fencegate-example-")
	defer os.RemoveAll(dir)
	db, _ := sqlgate.OpenSQLite(filepath.Join(dir, "app.db"), "FULL")
	defer db.Close()
	db.Exec(`CREATE TABLE invoices (batch TEXT, total INTEGER)`)

	iss := gatetest.NewIssuer("example") // stands in for the registry
	g, _ := sqlgate.New(sqlgate.Config{
		Dialect: sqlgate.SQLite,
		Policy:  gate.Policy{Verifier: iss.Verifier},
		Clock:   fixedClock{iss.Now},
	})
	g.Migrate(ctx, db)
	// A row's resource is its batch's; direct writes now fail.
	g.ProtectResource(ctx, db, "invoices", "'invoice-batch/' || batch", gate.ModeEnforce, "ops")

	settle := func(total int) sqlgate.BusinessFunc {
		return func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO invoices VALUES ('2026-07-19', ?)`, total)
			return err
		}
	}
	w := func(owner string, fence uint64, op string) gatetest.Writer {
		return gatetest.Writer{Resource: "invoice-batch/2026-07-19", Owner: owner, Lease: "lease-" + owner, OperationID: op, Fence: fence}
	}
	a := iss.WithStatus(iss.Mutation(w("worker-a", 41, "settle-a"), 1, "a"), grant.StateExpired) // A paused past its TTL
	b := iss.Mutation(w("worker-b", 42, "settle-b"), 1, "b")                                     // B took over

	_, err := g.Run(ctx, db, "worker-b", b, settle(200))
	fmt.Println("B:", gate.OutcomeOf(err))
	_, err = g.Run(ctx, db, "worker-b", b, settle(200))
	fmt.Println("B retry:", gate.OutcomeOf(err), gate.IsSuccess(err))
	_, err = g.Run(ctx, db, "worker-a", a, settle(100))
	fmt.Println("A wakes up:", err)
	_, err = db.Exec(`INSERT INTO invoices VALUES ('2026-07-19', 100)`)
	fmt.Println("direct write refused:", err != nil)
	ans, _ := g.QueryOperation(ctx, db, "invoice-batch/2026-07-19", "settle-a", 41)
	fmt.Println("A's operation:", ans.Verdict)
	// Output:
	// B: ACCEPTED
	// B retry: REPLAYED true
	// A wakes up: gate: STALE_OWNER: fence 41 < highest 42 (and grant is EXPIRED (status proof))
	// direct write refused: true
	// A's operation: PROVEN_ABSENT
}

// fixedClock is a gate clock that stands still.
type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }

func (c fixedClock) After(time.Duration) <-chan time.Time { return make(chan time.Time) } // the gate sets no timers
