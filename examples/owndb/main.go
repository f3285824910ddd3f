// Command owndb writes one row to its own SQLite database under a lock:
// the README's first example. Run a registry first (fencegate serve --dev).
package main

import (
	"context"
	"database/sql"
	"log"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/client/httpclient"
	"github.com/fencegate/fencegate/gate/sqlgate"
	"github.com/fencegate/fencegate/wire"
)

func main() {
	ctx := context.Background()
	w, err := httpclient.Connect(ctx, "http://127.0.0.1:7420", httpclient.WithBearerToken("fencegate-dev-token"))
	must(err)
	db, err := sqlgate.OpenLocal(ctx, "totals.db", w.Verifier) // SQLite, or a postgres:// URL
	must(err)
	lease, err := w.Lock(ctx, wire.AcquireRequest{Resource: "totals/2026-07-19"}) // waits its turn
	must(err)
	defer lease.Release(ctx)
	_, err = client.Apply(ctx, lease, db, []byte("total=200"), func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS totals (day TEXT PRIMARY KEY, total INT);
			INSERT OR REPLACE INTO totals VALUES ('2026-07-19', 200)`) // in the gate's transaction, once it accepted
		return err
	})
	must(err) // gate.ErrStaleOwner here: a newer holder wrote, nothing changed
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
