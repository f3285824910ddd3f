package pggate

import (
	"context"
	"database/sql"
)

// InstallUpTo exposes installUpTo to the upgrade tests.
func InstallUpTo(ctx context.Context, db *sql.DB, max int) (Installed, error) {
	return installUpTo(ctx, db, max)
}
