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
	c := *d
	loosen(&c.speculate, "speculate", old, new)
	loosen(&c.speculateStore, "speculate-store", old, new)
	return &c
}

// loosen replaces the first old in the statement *q by new, and panics if
// there is none: a loosening that changes nothing would let a test pass
// on the statement it meant to break.
func loosen(q *string, name, old, new string) {
	if !strings.Contains(*q, old) {
		panic(fmt.Sprintf("%s statement has no %q", name, old))
	}
	*q = strings.Replace(*q, old, new, 1)
}

// SpeculateStoreSQL is the gate's pipelined store statement, prefix and
// placeholders resolved.
func SpeculateStoreSQL(g *Gate) string { return g.stmt.speculateStore }

// BreakSpeculateStore is BreakSpeculation for the pipelined store
// statement alone: the way to tell which of the two forms ran.
func BreakSpeculateStore(d *Dialect, old, new string) *Dialect {
	c := *d
	loosen(&c.speculateStore, "speculate-store", old, new)
	return &c
}

// PipelinesOn exposes pgxDriver: whether Run pipelines on db.
func PipelinesOn(db *sql.DB) bool { return pgxDriver(db) }

// FastCounts returns how many fast statements stored an accept and how
// many found the cached state moved (fast.go).
func (g *Gate) FastCounts() (stored, missed uint64) {
	return g.fastStored.Load(), g.fastMissed.Load()
}

// BreakFast returns a copy of d whose fast statement has its first old
// replaced by new: the fast-path tests' way to loosen its compare.
func BreakFast(d *Dialect, old, new string) *Dialect {
	c := *d
	loosen(&c.fastStore, "fast-store", old, new)
	return &c
}
