// This file proves what the application's roles cannot do: read the
// gate's keys, call anything but apply, record, receipt and state, write
// the gate's tables, move its clock, or forge the mark the coverage guard
// trusts; that a protected table refuses a write outside an accepting
// apply; and that rejections carry their SQLSTATE and JSON detail. Each
// has its negative control (a grant to PUBLIC, an unprotected table).
package pggate_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/pggate"
	"github.com/fencegate/fencegate/testkit/gatetest/conformance"
)

// asWriter runs stmt as the role of conformance.Owner (a fencegate_writer)
// and returns its SQLSTATE ("" when it succeeded).
func asWriter(t *testing.T, w *world, stmt string, args ...any) string {
	t.Helper()
	ctx := context.Background()
	tx, err := w.beginAs(conformance.Owner)(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	_, err = tx.ExecContext(ctx, stmt, args...)
	var pe *pgconn.PgError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &pe):
		return pe.Code
	}
	t.Fatal(err)
	return ""
}

// forbidden are statements a writer must not be able to run.
var forbidden = map[string]string{
	"read the keys":         `SELECT secret FROM fencegate.keys`,
	"enroll a key":          `SELECT fencegate.set_key('k', '\x00', 1, 0, 'active')`,
	"use the MAC as oracle": `SELECT fencegate.verify('lockGrant.v1', '\x00', 1, 'mac:k:AA', 0)`,
	"move the clock":        `SELECT fencegate.set_clock(0)`,
	"write the fence state": `UPDATE fencegate.resources SET highest_fence = 0`,
	"forge the guard's mark": `INSERT INTO fencegate.receipts (resource, fence, seq, operation_id, operation_root, payload_digest, grant_digest, accepted_at_ms, mode)
VALUES ('r', 1, 1, 'op', 'x', 'x', 'x', 0, 'enforce')`,
	"resume":                 `SELECT fencegate.resume('r', 10, 'me', 'x')`,
	"map itself":             `SELECT fencegate.map_caller('x', 'worker-b')`,
	"decide in record mode":  `SELECT fencegate.run('{}', '', TRUE)`,
	"read the key history":   `SELECT secret_digest FROM fencegate.key_history`,
	"forget a key ID":        `DELETE FROM fencegate.key_history`,
	"digest a secret":        `SELECT fencegate.key_secret_digest('\x00')`,
	"poison the parse cache": `INSERT INTO fencegate.parsed VALUES ('\x00', '', 0)`,
	"read the parse cache":   `SELECT parse FROM fencegate.parsed`,
	"poison the proof cache": `INSERT INTO fencegate.proofs VALUES ('\x00', 'k', '\x00', 0)`,
	"read the proof cache":   `SELECT key_digest FROM fencegate.proofs`,
}

func TestWriterCannot(t *testing.T) {
	w := newWorld(t)
	for what, stmt := range forbidden {
		if code := asWriter(t, w, stmt); code != "42501" {
			t.Errorf("a writer could %s: SQLSTATE %q", what, code)
		}
	}
	// What it may do: call the four entry points.
	if code := asWriter(t, w, `SELECT fencegate.state('r'), fencegate.receipt('r', 'op', 1)`); code != "" {
		t.Errorf("a writer cannot read state and receipts: %s", code)
	}
	if code := asWriter(t, w, `SELECT fencegate.apply('{}', '')`); code != pggate.SQLState(gate.Malformed) {
		t.Errorf("a writer's malformed apply: SQLSTATE %q", code)
	}
}

func TestWriterCannotFailsWhenGranted(t *testing.T) {
	w := newWorld(t)
	if _, err := w.db.Exec(`GRANT USAGE ON SCHEMA fencegate TO PUBLIC; GRANT SELECT ON fencegate.keys TO PUBLIC`); err != nil {
		t.Fatal(err)
	}
	if code := asWriter(t, w, forbidden["read the keys"]); code != "" {
		t.Fatalf("with the keys granted to PUBLIC the probe still says %q: it cannot see a leak", code)
	}
}

// TestCoverageGuard protects the business table: a write outside an
// accepting apply is refused (FG020), as is one that only set what the
// guard of schema 4 trusted; one of the accepted resource lands and is
// counted, one of another resource in the same transaction does not.
// The issue-43 attacks, each with its negative control, are the guard
// table's (guard_test.go).
func TestCoverageGuard(t *testing.T) {
	ctx := context.Background()
	e := conformance.NewEnv(t, newHarness)
	h := e.H.(*harness)
	w := h.w
	if code := asWriter(t, w, `INSERT INTO effects (resource, payload) VALUES ('conf/g', 'unguarded')`); code != "" {
		t.Fatalf("negative control: an unprotected table refused a write: %s", code)
	}
	if err := pggate.Protect(ctx, w.db, "effects", gate.ModeEnforce, "test"); err != nil {
		t.Fatal(err)
	}
	if code := asWriter(t, w, `INSERT INTO effects (resource, payload) VALUES ('conf/g', 'unguarded')`); code != pggate.StateUnguarded {
		t.Fatalf("a write outside apply on an enforced table: SQLSTATE %q", code)
	}
	if code := asWriter(t, w, `SELECT set_config('fencegate.apply', '1', true); INSERT INTO effects (resource, payload) VALUES ('conf/g', 'forged')`); code != pggate.StateUnguarded {
		t.Fatalf("a session setting passed the guard: SQLSTATE %q", code)
	}
	if _, err := h.Apply(ctx, conformance.Owner, e.Mut("conf/g", 5, "op-a", 1, "a1"), "a1"); err != nil {
		t.Fatalf("an accepted write on the protected table: %v", err)
	}
	var gated int64
	if err := w.db.QueryRow(`SELECT gated_writes FROM fencegate.resources WHERE resource = 'conf/g'`).Scan(&gated); err != nil {
		t.Fatal(err)
	}
	if gated != 1 {
		t.Fatalf("gated writes %d, want 1", gated)
	}
	if err := pggate.Protect(ctx, w.db, "effects", gate.ModeShadow, "test"); !errors.Is(err, gate.ErrModeDowngrade) {
		t.Fatalf("enforce → shadow on a table: %v", err)
	}
	for _, bad := range []string{"nosuch", "resource; DROP TABLE effects", "$1", "resource -- x"} {
		if err := pggate.ProtectResource(ctx, w.db, "effects", bad, gate.ModeEnforce, "test"); !errors.Is(err, pggate.ErrRefused) {
			t.Fatalf("resource %q: %v", bad, err)
		}
	}
	c, err := pggate.Coverage(ctx, w.db)
	if err != nil || c.Gated != 1 || c.Ungated != 0 || len(c.Tables) != 1 ||
		c.Tables[0] != (gate.ProtectedTable{Table: "effects", Mode: gate.ModeEnforce, Resource: "resource"}) {
		t.Fatalf("coverage %+v, %v", c, err)
	}
}

// TestRejectionShape checks what a client in another language sees: the
// SQLSTATE, the outcome first in the message, a JSON detail, and for a
// replay the original receipt.
func TestRejectionShape(t *testing.T) {
	ctx := context.Background()
	e := conformance.NewEnv(t, newHarness)
	h := e.H.(*harness)
	m := e.Mut("conf/shape", 5, "op-a", 1, "a1")
	first, err := h.Apply(ctx, conformance.Owner, m, "a1")
	if err != nil {
		t.Fatal(err)
	}
	env, _ := macProofs(m, h.cfg.Verifier.Bundle()).MarshalJSON()
	tx, err := h.w.beginAs(conformance.Owner)(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	_, err = tx.ExecContext(ctx, `SELECT fencegate.apply($1, $2)`, string(env), m.PayloadDigest.String())
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "FG100" || !strings.HasPrefix(pe.Message, "fencegate: REPLAYED: ") {
		t.Fatalf("replay: %v", err)
	}
	var d struct {
		Outcome string          `json:"outcome"`
		Receipt json.RawMessage `json:"receipt"`
	}
	if err := json.Unmarshal([]byte(pe.Detail), &d); err != nil || d.Outcome != "REPLAYED" {
		t.Fatalf("detail %q: %v", pe.Detail, err)
	}
	rc, err := gate.DecodeReceipt(d.Receipt)
	if err != nil || rc.ID() != first.ID() {
		t.Fatalf("replay receipt %s (%v), original %s", rc.ID(), err, first.ID())
	}
	for _, o := range gate.Outcomes {
		if code := pggate.SQLState(o); o != gate.Accepted && (len(code) != 5 || !strings.HasPrefix(code, "FG")) {
			t.Errorf("%s has SQLSTATE %q", o, code)
		}
	}
	_ = sql.ErrNoRows
}
