package sqlgate

import (
	"database/sql"
	"fmt"
	"net/url"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// SQLiteBusyTimeoutMs is how long a SQLite connection waits for the write
// lock before failing with SQLITE_BUSY.
const SQLiteBusyTimeoutMs = 10000

// OpenSQLite opens (creating if needed) the SQLite database at path with
// what the gate needs: WAL, transactions that take the write lock at BEGIN
// (_txlock=immediate), a busy timeout, foreign keys enforced (the
// coverage guard's mark fails any commit that still holds one, by a
// deferred foreign key; so are the application's own foreign keys), and
// the given synchronous level ("FULL" for durability of every commit,
// "NORMAL" to fsync only at WAL checkpoints).
//
// The pool holds one connection. SQLite admits one writer at a time, and
// every transaction here is a writer; with more connections, waiting
// writers poll the lock with sleeps (SQLite's busy handler) and
// throughput collapses under contention, whereas database/sql queues them
// for the one connection in order. Consequently code running inside an
// Apply must use the transaction it is given, never db.
func OpenSQLite(path, synchronous string) (*sql.DB, error) {
	v := url.Values{}
	v.Set("_txlock", "immediate")
	v.Set("_journal_mode", "WAL")
	v.Set("_synchronous", synchronous)
	v.Set("_busy_timeout", fmt.Sprint(SQLiteBusyTimeoutMs))
	v.Set("_foreign_keys", "on")
	db, err := sql.Open("sqlite", "file:"+path+"?"+v.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlgate: open sqlite: %w", err)
	}
	db.SetMaxOpenConns(1)
	if err := db.Ping(); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlgate: open sqlite %s: %w", path, err)
	}
	return db, nil
}
