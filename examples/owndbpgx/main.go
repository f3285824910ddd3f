// Command owndbpgx is owndb for a program that speaks pgx: one row of its
// own PostgreSQL database ($DATABASE_URL) under a lock, the gate's checks
// and the row in one transaction on one connection.
package main

import (
	"context"
	"log"
	"os"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/client/httpclient"
	"github.com/fencegate/fencegate/gate/sqlgate"
	"github.com/fencegate/fencegate/wire"
)

func main() {
	ctx := context.Background()
	w, err := httpclient.Connect(ctx, "http://127.0.0.1:7420", httpclient.WithBearerToken("fencegate-dev-token"))
	must(err)
	db, err := sqlgate.OpenLocalPgx(ctx, os.Getenv("DATABASE_URL"), w.Verifier)
	must(err)
	defer db.Close(ctx)
	_, err = db.Conn.Exec(ctx, "CREATE TABLE IF NOT EXISTS totals (day TEXT PRIMARY KEY, total INT)")
	must(err)
	lease, err := w.Lock(ctx, wire.AcquireRequest{Resource: "totals/pgx/2026-07-19"})
	must(err)
	defer lease.Release(ctx)
	_, err = client.Apply(ctx, lease, db, []byte("total=300"), func(ctx context.Context, q sqlgate.PgxQuerier) error {
		_, err := q.Exec(ctx, "INSERT INTO totals VALUES ('2026-07-19', 300) ON CONFLICT (day) DO UPDATE SET total = 300")
		return err
	})
	must(err)
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
