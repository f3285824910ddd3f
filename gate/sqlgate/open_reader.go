package sqlgate

import (
	"database/sql"
	"fmt"
	"net/url"
)

// SQLiteReadersMax is the pool size of OpenSQLiteReader, 2.
const SQLiteReadersMax = 2

// OpenSQLiteReader opens an existing SQLite gate database read-only, for
// readers beside the service (its reporter, an overview): in WAL mode
// they read a snapshot without taking the write lock and without waiting
// for, or holding up, the one connection OpenSQLite's pool gives the
// writers. It never creates the file.
func OpenSQLiteReader(path string) (*sql.DB, error) {
	v := url.Values{}
	v.Set("mode", "ro")
	v.Set("_busy_timeout", fmt.Sprint(SQLiteBusyTimeoutMs))
	db, err := sql.Open("sqlite", "file:"+path+"?"+v.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlgate: open sqlite reader: %w", err)
	}
	db.SetMaxOpenConns(SQLiteReadersMax)
	if err := db.Ping(); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlgate: open sqlite reader %s: %w", path, err)
	}
	return db, nil
}
