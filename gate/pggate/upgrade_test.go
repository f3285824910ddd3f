// This file proves the gate inside PostgreSQL is what its source says,
// however the database got there: a fresh install, the psql script
// (Script), an install run again, and an upgrade from each released
// schema version (1 to 6, built from the frozen fixtures) end with the
// same catalog, entry by entry (gateCatalog: every function's definition
// with its SECURITY DEFINER and search_path, its owner and grants; every
// trigger; types, tables, columns, constraints, indexes; the versions
// recorded; the rows upgrades move), after the same keys, caller and
// protected tables were set up through the SQL each version had; and the
// source, which was written from the released versions, differs from
// version 6 as released in no entry but those changedSinceVersion6 names.
// The negative controls: the comparison catches each kind of difference put
// into an upgraded database, and an upgrade without each step of the
// refresh ends unlike a fresh install. A database a later fencegate
// installed is refused and left as it was.
package pggate_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/gate/pggate"
)

// seedGate sets up, through SQL every released version has, what an
// upgrade must carry: keys in each state, a caller, revoked epochs, and
// tables protected in each mode.
func seedGate(t testing.TB, db *sql.DB) {
	t.Helper()
	for _, s := range []string{
		`SELECT fencegate.set_key('up-1', sha256('up-1'), 1, 0, 'retired')`,
		`SELECT fencegate.set_key('up-2', sha256('up-2'), 1, 9, 'verify-only')`,
		`SELECT fencegate.set_key('up-3', sha256('up-3'), 2, 0, 'active')`,
		`SELECT fencegate.map_caller('fgc_upgrade', 'worker-up')`,
		`SELECT fencegate.set_revoked_below(2)`,
		`CREATE TABLE keyed (resource TEXT NOT NULL, v TEXT NOT NULL)`,
		`CREATE TABLE shadowed (resource TEXT NOT NULL)`,
		`SELECT fencegate.protect('keyed', 'enforce', 'test')`,
		`SELECT fencegate.protect('shadowed', 'shadow', 'test')`,
	} {
		if _, err := db.ExecContext(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// freshGate is a database installed fresh and seeded.
func freshGate(t testing.TB) *sql.DB {
	t.Helper()
	db := newGateDB(t)
	in, err := pggate.Install(context.Background(), db)
	if err != nil || in.From != 0 || in.To != pggate.SchemaVersion() {
		t.Fatalf("fresh install: %+v %v", in, err)
	}
	seedGate(t, db)
	return db
}

// upgradedGate is a database installed by released version v, seeded,
// then installed by this one (by install).
func upgradedGate(t testing.TB, v int, install func(context.Context, *sql.DB) (pggate.Installed, error)) *sql.DB {
	t.Helper()
	db := newReleasedDB(t, v)
	seedGate(t, db)
	in, err := install(context.Background(), db)
	if err != nil || in.From != v || in.To != pggate.SchemaVersion() {
		t.Fatalf("upgrade from version %d: %+v %v", v, in, err)
	}
	return db
}

func TestEveryUpgradeEndsAsAFreshInstall(t *testing.T) {
	want := gateCatalog(t, freshGate(t))
	if len(want) < 150 {
		t.Fatalf("the catalog lists %d entries: the queries see too little", len(want))
	}
	for _, v := range releasedVersions {
		t.Run(fmt.Sprintf("from version %d", v), func(t *testing.T) {
			t.Parallel()
			sameGate(t, gateCatalog(t, upgradedGate(t, v, pggate.Install)), fmt.Sprintf("upgraded from version %d", v), want)
		})
	}
	t.Run("psql script", func(t *testing.T) {
		t.Parallel()
		db := newGateDB(t)
		script, err := pggate.Script("fencegate")
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		for _, s := range []string{`CREATE SCHEMA fencegate`, `CREATE EXTENSION pgcrypto SCHEMA fencegate`, script} {
			if _, err := tx.ExecContext(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		seedGate(t, db)
		sameGate(t, gateCatalog(t, db), "installed by the psql script", want)
	})
	t.Run("version 6 as released", func(t *testing.T) {
		t.Parallel()
		db := newReleasedDB(t, 6)
		seedGate(t, db)
		if got := changedEntries(gateCatalog(t, db), want); !slices.Equal(got, changedSinceVersion6) {
			t.Fatalf("the source differs from version 6 as released in %q, want exactly %q:\n%s",
				got, changedSinceVersion6, catalogDiff(gateCatalog(t, db), want, "version 6 as released", "fresh"))
		}
	})
	t.Run("installed again", func(t *testing.T) {
		t.Parallel()
		db := freshGate(t)
		if in, err := pggate.Install(context.Background(), db); err != nil || in.From != pggate.SchemaVersion() {
			t.Fatalf("second install: %+v %v", in, err)
		}
		sameGate(t, gateCatalog(t, db), "installed twice", want)
	})
}

// changedSinceVersion6 are the catalog entries in which the source
// differs from schema version 6 as released, which it was written from
// (one definition a function, taken from the last version that replaced
// it): install_guard keeps a table's trigger when it already calls the
// guard's function, so that an install, which regenerates every guard,
// takes no lock on a protected table; resume and
// set_min_policy_generation check their operator and lock their
// resource through operated, which set_mode's order (the mode checked
// before the resource is created) keeps it from using; effective_proofs
// is PL/pgSQL (its query planned once a session, none run without
// gateProofs), parse_envelope reads a clean envelope in one query, and
// the identifier, digest and number checks (valid_*, parse_digest,
// parse_uint, verify's key ID, gate_proofs_rules' gate) bound a length
// beside an unbounded pattern instead of a bounded repetition, and
// run reads the settings and the caller's identity in one query, handing
// authenticate the operation classes and the clock to clock_at, verify
// reads its key and the revocation in one, and schema version 7 adds
// the parse cache (its table and the functions that keep it; issue 45:
// the gate's cost per write); schema version 8 lets parse_envelope take
// a batch proof's longer grantProof (issue 45 item 1: an envelope the
// earlier version refused as MALFORMED now authenticates by the gate's
// own pair); schema version 9 adds the proof cache (its table, and
// verify, taking the message's expiry, with keep_proof, which keep it),
// authenticate reads both caches in one query and builds a rejection's
// location only when it raises one (at); schema version 10 has
// authenticate refuse a read/write lock reader's grant (resource
// NAME/_read) with READ_GRANT, which sqlstate maps to FG015 (issue 46
// item 3: the earlier version accepted one presented for NAME/_read
// itself). None of the others changes what a caller sees. The test
// fails both ways: another entry differs, or one listed no longer does
// (then take it off).
var changedSinceVersion6 = []string{
	"column parsed.digest",
	"column parsed.parse",
	"column parsed.until_ms",
	"column proofs.epoch",
	"column proofs.id",
	"column proofs.key_digest",
	"column proofs.key_id",
	"column proofs.until_ms",
	"constraint fencegate.parsed",
	"constraint fencegate.proofs",
	"function fencegate.at(fencegate.envelope_t)",
	"function fencegate.authenticate(fencegate.envelope_t,text)",
	"function fencegate.authenticate(fencegate.envelope_t,text,text[])",
	"function fencegate.clock_at(bigint)",
	"function fencegate.effective_proofs(fencegate.envelope_t)",
	"function fencegate.gate_proofs_rules(jsonb,boolean)",
	"function fencegate.install_guard(regclass,text,text)",
	"function fencegate.keep_parse(bytea,text,bigint)",
	"function fencegate.keep_proof(bytea,text,bytea,numeric,bigint)",
	"function fencegate.now_ms()",
	"function fencegate.operated(text,text)",
	"function fencegate.parse_digest(text)",
	"function fencegate.parse_envelope(text)",
	"function fencegate.parse_uint(text)",
	"function fencegate.parsed_grant(text)",
	"function fencegate.parsed_status(text)",
	"function fencegate.resume(text,bigint,text,text)",
	"function fencegate.run(text,text,boolean)",
	"function fencegate.set_min_policy_generation(text,bigint,text)",
	"function fencegate.sqlstate(text)",
	"function fencegate.valid_class(text)",
	"function fencegate.valid_owner(text)",
	"function fencegate.valid_token(text)",
	"function fencegate.verify(text,bytea,numeric,text)",
	"function fencegate.verify(text,bytea,numeric,text,bigint)",
	"index CREATE",
	"relation parsed",
	"relation parsed_by_until",
	"relation parsed_pkey",
	"relation proofs",
	"relation proofs_by_until",
	"relation proofs_pkey",
	"versions 1,2,3,4,5,6",
	"versions 1,2,3,4,5,6,7,8,9,10",
}

// changedEntries names, sorted, the entries of two catalogs that one has
// and the other has not, by their first two words.
func changedEntries(a, b []string) []string {
	var out []string
	for _, side := range [][2][]string{{a, b}, {b, a}} {
		for _, s := range side[0] {
			if !slices.Contains(side[1], s) {
				f := strings.Fields(s)
				out = append(out, strings.Join(f[:min(2, len(f))], " "))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// injected are changes the comparison must catch, each of a kind an
// upgrade could leave behind.
var injected = map[string]string{
	"a function body":   `CREATE OR REPLACE FUNCTION fencegate.order_of(t BIGINT, ref BIGINT, skew BIGINT) RETURNS TEXT LANGUAGE sql IMMUTABLE AS $$ SELECT 'ambiguous' $$`,
	"SECURITY DEFINER":  `ALTER FUNCTION fencegate.apply(TEXT, TEXT) SECURITY INVOKER`,
	"a search_path":     `ALTER FUNCTION fencegate.state(TEXT) RESET search_path`,
	"a grant":           `GRANT EXECUTE ON FUNCTION fencegate.verify(TEXT, BYTEA, NUMERIC, TEXT, BIGINT) TO fencegate_writer`,
	"an owner":          `ALTER FUNCTION fencegate.set_clock(BIGINT) OWNER TO fencegate_writer`,
	"a trigger":         `DROP TRIGGER receipts_never_truncated ON fencegate.receipts`,
	"a guard":           `DROP TRIGGER fencegate_guard ON keyed`,
	"a guard's body":    `SELECT fencegate.install_guard('keyed', 'shadow', 'resource')`,
	"a type":            `ALTER TYPE fencegate.decision ADD ATTRIBUTE spare INT`,
	"a column":          `ALTER TABLE fencegate.receipts ADD COLUMN spare INT`,
	"an index":          `DROP INDEX fencegate.receipts_by_operation`,
	"a function extra":  `CREATE FUNCTION fencegate.guard() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$`,
	"a protected table": `UPDATE fencegate.protected SET resource_expr = '' WHERE table_name = 'shadowed'::regclass`,
}

func TestUpgradeCheckCanFail(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	want := gateCatalog(t, freshGate(t))
	db := upgradedGate(t, 5, pggate.Install)
	sameGate(t, gateCatalog(t, db), "upgraded from version 5", want)
	for name, stmt := range injected {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := gateCatalog(t, tx); slices.Equal(got, want) {
			t.Errorf("%s changed after the upgrade: not caught", name)
		} else {
			t.Logf("%s caught:\n%s", name, catalogDiff(got, want, "changed", "fresh"))
		}
		tx.Rollback()
	}
	// Each step of the refresh: an upgrade that needs it fails, or ends
	// unlike a fresh install, without it.
	for _, c := range []struct {
		step string
		from int // a version the step is needed from
	}{
		{"types", 1},    // grant_t, verified and envelope_t gained attributes since
		{"triggers", 4}, // keys_history and keys_truncated came with version 5
		{"drop what the source no longer has", 5}, // guard() and tx_accepts_done() went with version 6
		{"privileges", 1},                         // a function created since is PUBLIC's to call until revoked
	} {
		if !slices.Contains(pggate.RefreshSteps(), c.step) {
			t.Fatalf("no refresh step %q in %q", c.step, pggate.RefreshSteps())
		}
		db := newReleasedDB(t, c.from)
		seedGate(t, db)
		if _, err := pggate.InstallWithout(ctx, db, c.step); err != nil {
			t.Logf("from version %d without %q: %v", c.from, c.step, err)
			continue
		}
		if got := gateCatalog(t, db); slices.Equal(got, want) {
			t.Errorf("an upgrade from version %d without the step %q ends as a fresh install: the step is not shown needed", c.from, c.step)
		} else {
			t.Logf("from version %d without %q:\n%s", c.from, c.step, catalogDiff(got, want, "upgraded", "fresh"))
		}
	}
}

func TestInstallRefusesANewerSchema(t *testing.T) {
	ctx := context.Background()
	db := freshGate(t)
	if _, err := db.ExecContext(ctx, `INSERT INTO fencegate.schema_version (version) VALUES ($1)`, pggate.SchemaVersion()+1); err != nil {
		t.Fatal(err)
	}
	// What a later version's source would have made of a function.
	if _, err := db.ExecContext(ctx, injected["a function body"]); err != nil {
		t.Fatal(err)
	}
	before := gateCatalog(t, db)
	_, err := pggate.Install(ctx, db)
	if !errors.Is(err, pggate.ErrNewerSchema) {
		t.Fatalf("install over schema version %d: %v, want ErrNewerSchema", pggate.SchemaVersion()+1, err)
	}
	sameCatalog(t, gateCatalog(t, db), "after the refused install", before, "before")
}
