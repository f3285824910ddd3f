package sqlgate

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver for postgres:// DSNs

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
)

// Local is a gate over a worker's own database, ready for client.Apply:
// the database and a gate on it with its schema migrated. The worker is
// the service here, so the caller identity of each write is the lease's
// owner — the worker's own claim about itself, which is all a process
// can say to its own database; a gate that serves other processes
// authenticates its callers instead (Gate.Run's caller, from mTLS or a
// token). Safe for concurrent use.
type Local struct {
	DB   *sql.DB
	Gate *Gate
}

// OpenLocal opens dsn — a SQLite file path (OpenSQLite: WAL, immediate
// transactions, synchronous FULL), or PostgreSQL by a postgres:// URL or
// a key=value DSN with host= or dbname= (pgx's database/sql driver) —
// makes a gate that checks the registry's proofs with v (a
// Worker's Verifier from httpclient.Connect, or grant.NewVerifier over a
// bundle file), migrates the gate's tables, and returns both.
func OpenLocal(ctx context.Context, dsn string, v *grant.Verifier) (*Local, error) {
	d, open := SQLite, func() (*sql.DB, error) { return OpenSQLite(dsn, "FULL") }
	if isPostgres(dsn) {
		d, open = Postgres, func() (*sql.DB, error) { return sql.Open("pgx", dsn) }
	}
	db, err := open()
	if err != nil {
		return nil, fmt.Errorf("sqlgate: open local: %w", err)
	}
	g, err := New(Config{Dialect: d, Policy: gate.Policy{Verifier: v}})
	if err == nil {
		err = g.Migrate(ctx, db)
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlgate: open local: %w", err)
	}
	return &Local{DB: db, Gate: g}, nil
}

// isPostgres reports whether dsn names a PostgreSQL database.
func isPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") ||
		strings.Contains(dsn, "host=") || strings.Contains(dsn, "dbname=")
}

// Apply runs m through the gate in one transaction and, if accepted, fn in
// the same transaction, as Gate.Run does with caller as the writer's
// identity: client.Apply's LocalGate.
func (l *Local) Apply(ctx context.Context, caller string, m *gate.Mutation, fn func(context.Context, *sql.Tx) error) (gate.Receipt, error) {
	return l.Gate.Run(ctx, l.DB, caller, m, fn)
}

// Close closes the database.
func (l *Local) Close() error { return l.DB.Close() }

// LocalPgx is Local for programs that use pgx's own interface: a gate on
// a PostgreSQL database, writing through one pgx connection (RunPgx: an
// accepted write takes the round trips of a plain transaction). Not safe
// for concurrent use: one connection, one write at a time.
type LocalPgx struct {
	Conn *pgx.Conn
	Gate *Gate
}

// OpenLocalPgx connects to the PostgreSQL database url (a postgres:// URL
// or a key=value DSN) with pgx, migrates the
// gate's tables (through pgx's database/sql driver, once) and returns the
// connection with its gate, checking proofs with v.
func OpenLocalPgx(ctx context.Context, url string, v *grant.Verifier) (*LocalPgx, error) {
	l, err := OpenLocal(ctx, url, v)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	if l.Gate.d.name != Postgres.name {
		return nil, fmt.Errorf("sqlgate: open local pgx: %w", ErrNotPostgres)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("sqlgate: open local pgx: %w", err)
	}
	return &LocalPgx{Conn: conn, Gate: l.Gate}, nil
}

// Apply runs m through the gate and, if accepted, fn in the same
// transaction on the connection (RunPgx): client.Apply's LocalGate.
func (l *LocalPgx) Apply(ctx context.Context, caller string, m *gate.Mutation, fn func(context.Context, PgxQuerier) error) (gate.Receipt, error) {
	return l.Gate.RunPgx(ctx, l.Conn, caller, m, fn)
}

// Close closes the connection.
func (l *LocalPgx) Close(ctx context.Context) error { return l.Conn.Close(ctx) }
