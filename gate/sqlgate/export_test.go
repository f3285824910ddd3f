package sqlgate

import (
	"context"
	"database/sql"
)

// MigrateUpTo exposes migrateUpTo to the upgrade test.
func (g *Gate) MigrateUpTo(ctx context.Context, db *sql.DB, max int) error {
	return g.migrateUpTo(ctx, db, max)
}
