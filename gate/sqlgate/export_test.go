package sqlgate

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// MigrateUpTo exposes migrateUpTo to the upgrade test.
func (g *Gate) MigrateUpTo(ctx context.Context, db *sql.DB, max int) error {
	return g.migrateUpTo(ctx, db, max)
}

// BreakSpeculation returns a copy of d whose speculate statements (the
// one-statement form and the pipelined store) have their first old
// replaced by new: the speculation tests' way to loosen them.
func BreakSpeculation(d *Dialect, old, new string) *Dialect {
	if !strings.Contains(d.speculate, old) {
		panic(fmt.Sprintf("speculate statement has no %q", old))
	}
	c := *d
	c.speculate = strings.Replace(c.speculate, old, new, 1)
	c.speculateStore = strings.Replace(c.speculateStore, old, new, 1)
	return &c
}

// SpeculateStoreSQL is the gate's pipelined store statement, prefix and
// placeholders resolved.
func SpeculateStoreSQL(g *Gate) string { return g.stmt.speculateStore }

// BreakSpeculateStore is BreakSpeculation for the pipelined store
// statement alone: the way to tell which of the two forms ran.
func BreakSpeculateStore(d *Dialect, old, new string) *Dialect {
	if !strings.Contains(d.speculateStore, old) {
		panic(fmt.Sprintf("speculate-store statement has no %q", old))
	}
	c := *d
	c.speculateStore = strings.Replace(c.speculateStore, old, new, 1)
	return &c
}

// PipelinesOn exposes pgxDriver: whether Run pipelines on db.
func PipelinesOn(db *sql.DB) bool { return pgxDriver(db) }
