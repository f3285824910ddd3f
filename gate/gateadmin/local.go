package gateadmin

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver for postgres:// DSNs

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/sqlgate"
	"github.com/fencegate/fencegate/grant"
)

// Local is Admin on the gate's database itself. Operator is recorded with
// every action; the database's own access control is the authentication.
type Local struct {
	Gate     *sqlgate.Gate
	DB       *sql.DB
	Operator string
}

var _ Admin = (*Local)(nil)

// Status implements Admin; it reads in one transaction.
func (l *Local) Status(ctx context.Context, resource string) (Status, error) {
	if err := grant.ValidateResource(resource); err != nil {
		return Status{}, errorf("resource %q: %v", resource, err)
	}
	tx, err := l.DB.BeginTx(ctx, nil)
	if err != nil {
		return Status{}, fmt.Errorf("gateadmin: %w", err)
	}
	defer tx.Rollback()
	return statusOf(ctx, l.Gate, tx, resource)
}

// Resume implements Admin.
func (l *Local) Resume(ctx context.Context, req ResumeRequest) (Status, error) {
	return resume(ctx, l, req, l.Operator, func() error {
		return l.Gate.Resume(ctx, l.DB, req.Resource, req.Floor, l.Operator, req.Note)
	})
}

// IsPostgres reports whether dsn names PostgreSQL (a postgres:// or
// postgresql:// URL, or a libpq "host=… dbname=…" string) rather than a
// SQLite file.
func IsPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") ||
		strings.Contains(dsn, "host=") || strings.Contains(dsn, "dbname=")
}

// ErrNotMigrated: the database holds no gate tables at the version this
// build knows; an operator tool never migrates on its own.
var ErrNotMigrated = errors.New("gateadmin: database not at this build's gate schema")

// OpenLocal opens the gate's database at dsn (a SQLite file, which must
// exist, or PostgreSQL), checks that its schema is the one this build
// knows, and returns a Local that can administer it, and never accept a
// write (its trust bundle trusts no key). prefix is the table prefix (""
// for sqlgate.PrefixDefault). Close the DB when done.
func OpenLocal(ctx context.Context, dsn, prefix, operator string) (*Local, error) {
	var db *sql.DB
	var d *sqlgate.Dialect
	var err error
	if IsPostgres(dsn) {
		d = sqlgate.Postgres
		db, err = sql.Open("pgx", dsn)
	} else {
		d = sqlgate.SQLite
		db, err = openExistingSQLite(dsn)
	}
	if err != nil {
		return nil, fmt.Errorf("gateadmin: open %s: %w", redact(dsn), err)
	}
	g, err := adminGate(d, prefix)
	if err == nil {
		err = checkSchema(ctx, g, db)
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	return &Local{Gate: g, DB: db, Operator: operator}, nil
}

// adminGate is a gate that trusts no key: it reads and administers, and
// would reject every mutation as BAD_PROOF.
func adminGate(d *sqlgate.Dialect, prefix string) (*sqlgate.Gate, error) {
	b, err := grant.NewBundle(grant.BundleFile{Version: 1}, "")
	if err != nil {
		return nil, err
	}
	return sqlgate.New(sqlgate.Config{Dialect: d, Prefix: prefix, Policy: gate.Policy{Verifier: grant.NewVerifier(b, 0)}})
}

func checkSchema(ctx context.Context, g *sqlgate.Gate, db *sql.DB) error {
	v, err := g.AppliedVersion(ctx, db)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNotMigrated, err)
	}
	if v != sqlgate.SchemaVersion() {
		return fmt.Errorf("%w: the database is at schema %d, this fencegate knows %d (start the service of this version once, or use the fencegate of the service's version)", ErrNotMigrated, v, sqlgate.SchemaVersion())
	}
	return nil
}

// openExistingSQLite opens a SQLite gate database that must already exist:
// a typo in a path must not create an empty database that then reports
// every resource as never seen.
func openExistingSQLite(path string) (*sql.DB, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%s is a directory, not a SQLite database", path)
	}
	return sqlgate.OpenSQLite(path, "FULL")
}

// redact drops a URL's password from messages.
func redact(dsn string) string {
	if i := strings.Index(dsn, "://"); i >= 0 {
		if at := strings.Index(dsn[i+3:], "@"); at >= 0 {
			cred := dsn[i+3 : i+3+at]
			if c := strings.Index(cred, ":"); c >= 0 {
				return dsn[:i+3] + cred[:c] + ":***" + dsn[i+3+at:]
			}
		}
	}
	return dsn
}
