// Package sqlsession is conformance.Session over one database/sql
// connection, for the guard table's SQL harnesses (sqlgate on SQLite and
// PostgreSQL, the gate inside PostgreSQL): writes to the protected table
// (under a savepoint in a transaction, so a refused one leaves it
// usable), transactions, and the adapter's own Apply, Loosen and Forge.
package sqlsession

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/testkit/gatetest/conformance"
)

// Execer runs a statement on the session's connection or transaction.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// Adapter is what differs between the SQL adapters.
type Adapter struct {
	// Table is the protected table, with the columns resource and
	// payload.
	Table string
	// Rebind turns the $N placeholders the statements are written with
	// into the dialect's (nil: none).
	Rebind func(string) string
	// Apply runs m through the gate in tx, business being the change.
	Apply func(ctx context.Context, tx *sql.Tx, caller string, m *gate.Mutation, business func(context.Context, *sql.Tx) error) (gate.Receipt, error)
	// Loosen and Forge are conformance.Writer's, on q.
	Loosen func(ctx context.Context, q Execer, local bool) error
	Forge  func(ctx context.Context, q Execer, resource string) error
}

// Session is conformance.Session on conn.
type Session struct {
	a    Adapter
	conn *sql.Conn
	tx   *sql.Tx
}

var _ conformance.Session = (*Session)(nil)

// New returns a session on conn, which Close discards (a connection an
// attack loosened never goes back to the pool).
func New(a Adapter, conn *sql.Conn) *Session {
	if a.Rebind == nil {
		a.Rebind = func(q string) string { return q }
	}
	return &Session{a: a, conn: conn}
}

// Close discards the connection.
func (s *Session) Close() {
	if s.tx != nil {
		s.tx.Rollback()
	}
	_ = s.conn.Raw(func(any) error { return driver.ErrBadConn })
	s.conn.Close()
}

func (s *Session) q() Execer {
	if s.tx != nil {
		return s.tx
	}
	return s.conn
}

// Begin implements conformance.Session.
func (s *Session) Begin(ctx context.Context) error {
	if s.tx != nil {
		return errors.New("sqlsession: a transaction is open")
	}
	tx, err := s.conn.BeginTx(ctx, nil)
	s.tx = tx
	return err
}

// Commit implements conformance.Session.
func (s *Session) Commit(context.Context) error {
	if s.tx == nil {
		return errors.New("sqlsession: no transaction")
	}
	tx := s.tx
	s.tx = nil
	return tx.Commit()
}

// Rollback implements conformance.Session; without a transaction it does
// nothing.
func (s *Session) Rollback(context.Context) error {
	if s.tx == nil {
		return nil
	}
	tx := s.tx
	s.tx = nil
	return tx.Rollback()
}

// Write implements conformance.Writer.
func (s *Session) Write(ctx context.Context, resource, payload string) error {
	return write(ctx, s.a, s.q(), s.tx != nil, `INSERT INTO `+s.a.Table+` (resource, payload) VALUES ($1, $2)`, resource, payload)
}

// Move implements conformance.Writer.
func (s *Session) Move(ctx context.Context, from, to string) error {
	return write(ctx, s.a, s.q(), s.tx != nil, `UPDATE `+s.a.Table+` SET resource = $2 WHERE resource = $1`, from, to)
}

// Loosen implements conformance.Writer.
func (s *Session) Loosen(ctx context.Context, local bool) error { return s.a.Loosen(ctx, s.q(), local) }

// Forge implements conformance.Writer.
func (s *Session) Forge(ctx context.Context, resource string) error {
	return s.a.Forge(ctx, s.q(), resource)
}

// Apply implements conformance.Session: in the open transaction (a
// rejection, or a failed business change, rolled back to a savepoint),
// else in one of its own on the connection, committed when the write
// stands.
func (s *Session) Apply(ctx context.Context, caller string, m *gate.Mutation, body func(context.Context, conformance.Writer) error) (gate.Receipt, error) {
	business := func(ctx context.Context, tx *sql.Tx) error { return body(ctx, txWriter{s.a, tx}) }
	if s.tx != nil {
		if _, err := s.tx.ExecContext(ctx, "SAVEPOINT conformance_apply"); err != nil {
			return gate.Receipt{}, err
		}
		rc, err := s.a.Apply(ctx, s.tx, caller, m, business)
		end := "RELEASE SAVEPOINT conformance_apply"
		if err != nil {
			end = "ROLLBACK TO SAVEPOINT conformance_apply"
		}
		if _, eerr := s.tx.ExecContext(ctx, end); eerr != nil {
			return rc, errors.Join(err, eerr)
		}
		return rc, err
	}
	tx, err := s.conn.BeginTx(ctx, nil)
	if err != nil {
		return gate.Receipt{}, err
	}
	defer tx.Rollback()
	rc, err := s.a.Apply(ctx, tx, caller, m, business)
	if err != nil {
		return rc, err
	}
	return rc, tx.Commit()
}

// txWriter is conformance.Writer inside a business change.
type txWriter struct {
	a  Adapter
	tx *sql.Tx
}

func (w txWriter) Write(ctx context.Context, resource, payload string) error {
	return write(ctx, w.a, w.tx, true, `INSERT INTO `+w.a.Table+` (resource, payload) VALUES ($1, $2)`, resource, payload)
}

func (w txWriter) Move(ctx context.Context, from, to string) error {
	return write(ctx, w.a, w.tx, true, `UPDATE `+w.a.Table+` SET resource = $2 WHERE resource = $1`, from, to)
}

func (w txWriter) Loosen(ctx context.Context, local bool) error { return w.a.Loosen(ctx, w.tx, local) }

func (w txWriter) Forge(ctx context.Context, resource string) error {
	return w.a.Forge(ctx, w.tx, resource)
}

// write runs q on e, in a transaction under a savepoint that a failure
// rolls back to.
func write(ctx context.Context, a Adapter, e Execer, inTx bool, q string, args ...any) error {
	if !inTx {
		_, err := e.ExecContext(ctx, a.Rebind(q), args...)
		return err
	}
	if _, err := e.ExecContext(ctx, "SAVEPOINT conformance_write"); err != nil {
		return fmt.Errorf("sqlsession: savepoint: %w", err)
	}
	_, err := e.ExecContext(ctx, a.Rebind(q), args...)
	end := "RELEASE SAVEPOINT conformance_write"
	if err != nil {
		end = "ROLLBACK TO SAVEPOINT conformance_write"
	}
	if _, eerr := e.ExecContext(ctx, end); eerr != nil {
		return errors.Join(err, eerr)
	}
	return err
}
