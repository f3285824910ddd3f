package pggate

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"strings"
)

//go:embed sql/*.sql
var sqlFiles embed.FS

// migrations are the schema versions, each the concatenation of its
// files, applied in order, each once, in one transaction each. Append;
// never edit a released one (a later version replaces a function with
// CREATE OR REPLACE). {crypto} is the schema pgcrypto is installed in.
// A number may be left out (no files): versions are numbered where they
// were begun, and one begun later can land first; Versions skips it and
// nothing records it, so it is applied when it lands.
var migrations = [][]string{
	1: {"sql/v1_parse.sql", "sql/v1_decide.sql", "sql/v1_apply.sql"},
	// 2: a lockGrant.v1 may carry its own HELD statement (heldUntil).
	2: {"sql/v2_parse.sql", "sql/v2_decide.sql"},
	// 3: each enrolled gate's own HMAC proofs (gateProofs).
	3: {"sql/v3_gateproofs.sql"},
	// 4: the same functions in PL/pgSQL, a third cheaper per apply.
	4: {"sql/v4_plpgsql_helpers.sql"},
	// 5: a key ID is used once, forever (fencegate.key_history).
	5: {"sql/v5_key_history.sql"},
	// 6: the coverage guard admits a protected row only under an accept
	// of the row's own resource in this transaction (the receipt is the
	// mark); tx_accepts goes.
	6: {"sql/v6_guard.sql"},
}

// SchemaVersion is the version Install brings a database to.
func SchemaVersion() int { return len(migrations) - 1 }

// Versions returns the schema versions that exist, in the order Install
// applies them (ascending; a number never used is not listed).
func Versions() []int {
	var vs []int
	for v, files := range migrations {
		if len(files) > 0 {
			vs = append(vs, v)
		}
	}
	return vs
}

// Script returns the SQL of version v with pgcrypto's schema cryptoSchema
// filled in: what Install runs, for a DBA who installs with psql.
func Script(v int, cryptoSchema string) (string, error) {
	if v < 1 || v > SchemaVersion() || len(migrations[v]) == 0 {
		return "", fmt.Errorf("pggate: no schema version %d (versions %v)", v, Versions())
	}
	var b strings.Builder
	for _, name := range migrations[v] {
		body, err := sqlFiles.ReadFile(name)
		if err != nil {
			return "", fmt.Errorf("pggate: %w", err)
		}
		b.Write(body)
		b.WriteByte('\n')
	}
	return strings.ReplaceAll(b.String(), "{crypto}", quoteIdent(cryptoSchema)), nil
}

// Installed is what Install found and did.
type Installed struct {
	From, To     int    // schema version before and after (From 0: fresh)
	CryptoSchema string // where pgcrypto lives
}

// Install creates or upgrades the fencegate schema to SchemaVersion, as
// the connecting role, which becomes the gate's owner (it needs CREATE on
// the database, and CREATEROLE the first time, for fencegate_writer).
// pgcrypto is created in the fencegate schema unless the database already
// has it. It is safe to run from several processes at once and to run
// again: a session-level advisory lock, held from the first version read
// to the last version applied, makes concurrent installs take turns, so
// exactly one of them applies the versions missing and the others find
// them applied (Installed.From is the version each found).
func Install(ctx context.Context, db *sql.DB) (Installed, error) {
	return installUpTo(ctx, db, SchemaVersion())
}

// installUpTo is Install up to version max (the upgrade tests' start).
func installUpTo(ctx context.Context, db *sql.DB, max int) (Installed, error) {
	var in Installed
	conn, err := db.Conn(ctx)
	if err != nil {
		return in, fmt.Errorf("pggate: install: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock(hashtext('fencegate/pggate/install'))`); err != nil {
		return in, fmt.Errorf("pggate: install: lock: %w", err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(hashtext('fencegate/pggate/install'))`)
	for _, v := range Versions() {
		if v > max {
			break
		}
		applied, err := installVersion(ctx, conn, v, &in)
		if err != nil {
			return in, fmt.Errorf("pggate: install version %d: %w", v, err)
		}
		if !applied { // under the lock, the applied versions are a prefix
			in.From = v
		}
	}
	in.To = max
	return in, nil
}

// installVersion applies version v unless it is, and reports whether it
// did. The caller holds the install lock; each version is a transaction
// of its own, so a failure leaves the versions before it applied.
func installVersion(ctx context.Context, conn *sql.Conn, v int, in *Installed) (bool, error) {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	setup := []string{
		`CREATE SCHEMA IF NOT EXISTS fencegate`,
		`CREATE TABLE IF NOT EXISTS fencegate.schema_version (version INT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`,
		`REVOKE ALL ON fencegate.schema_version FROM PUBLIC`,
	}
	for _, s := range setup {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return false, err
		}
	}
	if in.CryptoSchema, err = cryptoSchema(ctx, tx); err != nil {
		return false, err
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM fencegate.schema_version WHERE version = $1`, v).Scan(&n); err != nil {
		return false, err
	}
	if n > 0 {
		return false, tx.Commit()
	}
	script, err := Script(v, in.CryptoSchema)
	if err != nil {
		return false, err
	}
	if _, err := tx.ExecContext(ctx, script); err != nil {
		return false, err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO fencegate.schema_version (version) VALUES ($1)`, v); err != nil {
		return false, err
	}
	return true, tx.Commit()
}

// cryptoSchema returns where pgcrypto is, creating it in the fencegate
// schema when the database has none.
func cryptoSchema(ctx context.Context, tx *sql.Tx) (string, error) {
	var schema string
	err := tx.QueryRowContext(ctx, `SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'pgcrypto'`).Scan(&schema)
	if errors.Is(err, sql.ErrNoRows) {
		if _, err := tx.ExecContext(ctx, `CREATE EXTENSION pgcrypto SCHEMA fencegate`); err != nil {
			return "", fmt.Errorf("create extension pgcrypto: %w", err)
		}
		return "fencegate", nil
	}
	return strings.Trim(schema, `"`), err
}

// Version returns the installed schema version (0: none).
func Version(ctx context.Context, db *sql.DB) (int, error) {
	var v sql.NullInt64
	err := db.QueryRowContext(ctx, `SELECT CASE WHEN to_regclass('fencegate.schema_version') IS NULL THEN 0 END`).Scan(&v)
	if err != nil {
		return 0, fmt.Errorf("pggate: version: %w", err)
	}
	if v.Valid {
		return 0, nil
	}
	if err := db.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM fencegate.schema_version`).Scan(&v); err != nil {
		return 0, fmt.Errorf("pggate: version: %w", err)
	}
	return int(v.Int64), nil
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
