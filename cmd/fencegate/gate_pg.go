package main

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/fencegate/fencegate/gate/pggate"
	"github.com/fencegate/fencegate/gate/sqlgate"
)

// openGateInsidePG opens the PostgreSQL database of --db and reports
// whether it holds the gate inside PostgreSQL (the schema fencegate of
// fencegate gate install) rather than a gate/sqlgate gate. A database
// holding both is ambiguous: the caller is told so rather than shown
// one of them. When inside is false the handle is closed.
func openGateInsidePG(ctx context.Context, g *gateFlags) (db *sql.DB, inside bool, err error) {
	db, err = pggate.Open(g.db, "")
	if err != nil {
		return nil, false, err
	}
	v, err := pggate.Version(ctx, db)
	if err != nil || v == 0 {
		db.Close()
		return nil, false, err
	}
	prefix := g.prefix
	if prefix == "" {
		prefix = sqlgate.PrefixDefault
	}
	var sqlGate bool
	if err := db.QueryRowContext(ctx, `SELECT to_regclass($1) IS NOT NULL`, prefix+"schema_migrations").Scan(&sqlGate); err != nil {
		db.Close()
		return nil, false, fmt.Errorf("gate: %w", err)
	}
	if sqlGate {
		db.Close()
		return nil, false, usagef("the database holds both a gate/sqlgate gate (tables %s*) and the gate inside PostgreSQL (schema fencegate); give the other gate's tables another --table-prefix, or use a database for each", prefix)
	}
	return db, true, nil
}
