// This file compiles the README's Go snippets exactly as they are printed
// there (a test that fails to build if they drift); Example_readme is not
// run, since it needs a registry and a database.
package client_test

import (
	"context"
	"database/sql"
	"errors"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/client/httpclient"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/sqlgate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/gatetest"
	"github.com/fencegate/fencegate/wire"
)

func Example_readme() {
	ctx, token, payloadDigest := context.Background(), "token", gatetest.Payload("rows 1-1000")
	var bundle *grant.Bundle
	var db *sql.DB
	callerIdentity, total, batch := "worker-settlement-7", 200, "2026-07-19"

	// README: a worker.
	rc, _ := httpclient.NewClient("https://registry:7420", httpclient.WithBearerToken(token))
	s := client.NewSession(rc, client.Options{})
	l, err := s.Lock(ctx, wire.AcquireRequest{Resource: "invoice-batch/2026-07-19", // waits while another worker holds it
		OperationID: "settle-42", OperationClass: "settle", TTLMs: 10_000})
	if err != nil {
		return // ctx ended, or the registry said no (errors.Is against registry.Err…)
	}
	defer l.Release(ctx)                   // drains: waits while an unanswered envelope's proof could still be accepted
	m, err := l.Envelope(1, payloadDigest) // grant + proofs + fence + segment; refused once ownership is uncertain
	// send m with the payload to the service, then l.Settle(1, gate.OutcomeOf(answer))

	// README: the service, in the write's own transaction.
	g, _ := sqlgate.New(sqlgate.Config{Dialect: sqlgate.SQLite, Policy: gate.Policy{Verifier: grant.NewVerifier(bundle, 0)}})
	_ = g.Migrate(ctx, db)
	rcpt, err := g.Run(ctx, db, callerIdentity, &m, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "UPDATE invoices SET total = ? WHERE batch = ?", total, batch)
		return err
	})
	if errors.Is(err, gate.ErrStaleOwner) { /* a newer owner has written; nothing changed */
	}
	_ = rcpt
}
