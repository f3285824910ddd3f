package pggate

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"strings"
)

//go:embed sql/*.sql sql/migrations/*.sql
var sqlFiles embed.FS

// migrations[v] is the file of schema version v: tables, columns,
// indexes and data moves, never a function. Append; never edit a
// released one. A number may be left out (""): versions are numbered
// where they were begun, and one begun later can land first; Versions
// skips it and nothing records it, so it is applied when it lands.
var migrations = []string{
	1:  "sql/migrations/v1_tables.sql",
	2:  "sql/migrations/v2_held_statement.sql", // functions only
	3:  "sql/migrations/v3_gate_proofs.sql",    // functions only
	4:  "sql/migrations/v4_plpgsql.sql",        // functions only
	5:  "sql/migrations/v5_key_history.sql",
	6:  "sql/migrations/v6_guard.sql",
	7:  "sql/migrations/v7_parsed.sql",
	8:  "sql/migrations/v8_batch_proofs.sql", // functions only
	9:  "sql/migrations/v9_proof_cache.sql",
	10: "sql/migrations/v10_read_grant.sql", // functions only
}

// source is the gate's code, one concern a file, in the order an
// install runs it; privilegesFile comes last, after the functions no
// longer in the source are dropped. Each function, type and trigger is
// defined once, here: Install creates them all again on every run.
// {crypto} is the schema pgcrypto is installed in.
//
// A change here that a client or a registry can tell apart (a new
// envelope member, another outcome) takes a new schema version, even
// one without a table change, so that an older fencegate refuses to
// install its functions over the newer ones (ErrNewerSchema).
var source = []string{
	"sql/common.sql",
	"sql/parse.sql",
	"sql/authenticate.sql",
	"sql/decide.sql",
	"sql/apply.sql",
	"sql/operate.sql",
	"sql/key_history.sql",
	"sql/guard.sql",
}

const privilegesFile = "sql/privileges.sql"

// setup makes the bookkeeping every version is recorded in.
var setup = []string{
	`CREATE SCHEMA IF NOT EXISTS fencegate`,
	`CREATE TABLE IF NOT EXISTS fencegate.schema_version (version INT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`,
	`REVOKE ALL ON fencegate.schema_version FROM PUBLIC`,
}

// ErrNewerSchema is Install's refusal of a database whose schema version
// is above SchemaVersion: a later fencegate installed it, and this one
// would put its older functions over that version's tables.
var ErrNewerSchema = errors.New("pggate: the database's gate is newer than this fencegate")

// SchemaVersion is the version Install brings a database to.
func SchemaVersion() int { return len(migrations) - 1 }

// Versions returns the schema versions that exist, in the order Install
// applies them (ascending; a number never used is not listed).
func Versions() []int {
	var vs []int
	for v, file := range migrations {
		if file != "" {
			vs = append(vs, v)
		}
	}
	return vs
}

// migration returns the SQL of schema version v.
func migration(v int) (string, error) {
	if v < 1 || v > SchemaVersion() || migrations[v] == "" {
		return "", fmt.Errorf("pggate: no schema version %d (versions %v)", v, Versions())
	}
	return readSQL(migrations[v], "")
}

// readSQL returns an embedded file with {crypto} filled in.
func readSQL(name, cryptoSchema string) (string, error) {
	body, err := sqlFiles.ReadFile(name)
	if err != nil {
		return "", fmt.Errorf("pggate: %w", err)
	}
	return strings.ReplaceAll(string(body), "{crypto}", quoteIdent(cryptoSchema)), nil
}

// Script returns, as one SQL script for psql, what Install does to a
// database without the gate whose pgcrypto is in cryptoSchema: the
// bookkeeping, every schema version recorded as it is applied, then the
// source. Run it in one transaction (psql -1); on a database that has
// the gate, use Install.
func Script(cryptoSchema string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "-- fencegate: the gate inside PostgreSQL, schema version %d, for a database without it\n", SchemaVersion())
	for _, s := range setup {
		b.WriteString(s + ";\n")
	}
	for _, v := range Versions() {
		m, err := migration(v)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "\n-- schema version %d (%s)\n%s\nINSERT INTO fencegate.schema_version (version) VALUES (%d);\n", v, migrations[v], m, v)
	}
	for _, name := range append(source, privilegesFile) {
		s, err := readSQL(name, cryptoSchema)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "\n-- %s\n%s", name, s)
	}
	return b.String(), nil
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
// has it. In one transaction it applies the schema versions missing, in
// order, then creates the gate's functions, types and triggers again from
// the source and drops the functions no longer in it, so that a database
// upgraded from any version ends as a fresh one does; a failure leaves
// the database as it was. It is safe to run from several processes at
// once and to run again: a session-level advisory lock, held from the
// first version read to the commit, makes concurrent installs take turns,
// so exactly one of them applies the versions missing and the others find
// them applied (Installed.From is the version each found). A database
// above SchemaVersion is refused with ErrNewerSchema.
func Install(ctx context.Context, db *sql.DB) (Installed, error) {
	return install(ctx, db, refreshSteps)
}

func install(ctx context.Context, db *sql.DB, steps []refreshStep) (Installed, error) {
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
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return in, fmt.Errorf("pggate: install: %w", err)
	}
	defer tx.Rollback()
	if err := migrate(ctx, tx, &in); err != nil {
		return in, err
	}
	c, err := loadCode(in.CryptoSchema)
	if err != nil {
		return in, err
	}
	for _, s := range steps {
		if err := s.run(ctx, tx, c); err != nil {
			return in, fmt.Errorf("pggate: install: %s: %w", s.name, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return in, fmt.Errorf("pggate: install: %w", err)
	}
	in.To = SchemaVersion()
	return in, nil
}

// migrate applies, in tx, the schema versions the database has not
// recorded, and fills in.From and in.CryptoSchema.
func migrate(ctx context.Context, tx *sql.Tx, in *Installed) error {
	for _, s := range setup {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("pggate: install: %w", err)
		}
	}
	var err error
	if in.CryptoSchema, err = cryptoSchema(ctx, tx); err != nil {
		return fmt.Errorf("pggate: install: %w", err)
	}
	applied := map[int]bool{}
	rows, err := tx.QueryContext(ctx, `SELECT version FROM fencegate.schema_version`)
	if err != nil {
		return fmt.Errorf("pggate: install: %w", err)
	}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return fmt.Errorf("pggate: install: %w", err)
		}
		applied[v] = true
		in.From = max(in.From, v)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("pggate: install: %w", err)
	}
	if in.From > SchemaVersion() {
		return fmt.Errorf("%w: it is at schema version %d, this one installs %d: run gate install with the fencegate that installed it, or a later one", ErrNewerSchema, in.From, SchemaVersion())
	}
	for _, v := range Versions() {
		if applied[v] {
			continue
		}
		m, err := migration(v)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, m); err != nil {
			return fmt.Errorf("pggate: install version %d: %w", v, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO fencegate.schema_version (version) VALUES ($1)`, v); err != nil {
			return fmt.Errorf("pggate: install version %d: %w", v, err)
		}
	}
	return nil
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
