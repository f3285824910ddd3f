// This file proves the parse cache of schema version 7 (fencegate.parsed):
// an entry is exactly what parsing the message again returns, apply reads
// it (a changed entry changes the outcome: the negative control, and the
// reason a writer may not touch it, privileges_test.go), and an install
// empties it.
package pggate_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/pggate"
	"github.com/fencegate/fencegate/testkit/gatetest/conformance"
)

func TestParseCache(t *testing.T) {
	ctx := context.Background()
	e := conformance.NewEnv(t, newHarness)
	h := e.H.(*harness)
	db := h.w.db
	if err := h.w.setClock(ctx, h.cfg.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	const r = "cache/r"
	apply := func(seq uint64) error {
		m := macProofs(e.Mut(r, 5, "op-a", seq, "p"), h.cfg.Verifier.Bundle())
		_, err := pggate.RunIn(ctx, db, h.w.beginAs(conformance.Owner), m, func(context.Context, *sql.Tx) error { return nil })
		return err
	}
	count := func() (n int) {
		if err := db.QueryRow(`SELECT count(*) FROM fencegate.parsed`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if err := apply(1); err != nil {
		t.Fatal(err)
	}
	m := e.Mut(r, 5, "op-a", 2, "p")
	// An entry is the parse: the grant's and the status's, each keyed by
	// the SHA-256 of its bytes.
	var same bool
	err := db.QueryRow(`SELECT
	  (SELECT parse FROM fencegate.parsed WHERE digest = sha256(convert_to($1, 'UTF8'))) = fencegate.parse_grant($1)::text
	  AND (SELECT parse FROM fencegate.parsed WHERE digest = sha256(convert_to($2, 'UTF8'))) = fencegate.parse_status($2)::text`,
		string(m.Grant), string(m.Status)).Scan(&same)
	if err != nil || !same || count() != 2 {
		t.Fatalf("the cache after one accept: %d entries, each the parse: %v (%v)", count(), same, err)
	}
	// Apply reads it: an entry naming another owner turns the next
	// segment away.
	if _, err := db.Exec(`UPDATE fencegate.parsed SET parse = replace(parse, $2, 'someone-else') WHERE digest = sha256(convert_to($1, 'UTF8'))`,
		string(m.Grant), conformance.Owner); err != nil {
		t.Fatal(err)
	}
	if err := apply(2); !errors.Is(err, gate.ErrIdentityMismatch) {
		t.Fatalf("with the cached grant naming another owner: %v, want IDENTITY_MISMATCH", err)
	}
	// An install empties it, and the segment is accepted again.
	if _, err := pggate.Install(ctx, db); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 0 {
		t.Fatalf("after an install the cache holds %d entries", n)
	}
	if err := apply(2); err != nil {
		t.Fatalf("after the install: %v", err)
	}
}
