package pggate

import (
	"database/sql"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// Open returns a database/sql handle over pgx for dsn (a postgres:// URL
// or key=value string; "" takes the PG* environment variables, as psql
// does), on database instead of the DSN's own when database is not "".
func Open(dsn, database string) (*sql.DB, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("pggate: dsn: %w", err)
	}
	if database != "" {
		cfg.Database = database
	}
	return stdlib.OpenDB(*cfg), nil
}
