package pggate

import (
	"context"
	"database/sql"
	"fmt"
)

// Migration exposes migration to the install tests.
func Migration(v int) (string, error) { return migration(v) }

// InstallWithout is Install without the refresh step named step: the
// upgrade test's negative controls.
func InstallWithout(ctx context.Context, db *sql.DB, step string) (Installed, error) {
	var steps []refreshStep
	for _, s := range refreshSteps {
		if s.name != step {
			steps = append(steps, s)
		}
	}
	if len(steps) == len(refreshSteps) {
		return Installed{}, fmt.Errorf("pggate: no refresh step %q", step)
	}
	return install(ctx, db, steps)
}

// RefreshSteps names the refresh's steps, in order.
func RefreshSteps() []string {
	var names []string
	for _, s := range refreshSteps {
		names = append(names, s.name)
	}
	return names
}
