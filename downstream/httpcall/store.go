package httpcall

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/fencegate/fencegate/gate/sqlgate"
	"github.com/fencegate/fencegate/grant"
)

// store keeps the intents in the local database: one row per recorded
// call, inserted in the accepting transaction (so an intent exists iff
// its receipt does), its outcome updated afterwards.
type store struct {
	sqlite bool
	table  string
}

func newStore(d *sqlgate.Dialect, prefix string) (store, error) {
	if prefix == "" {
		prefix = sqlgate.PrefixDefault
	}
	if strings.Trim(prefix, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" || len(prefix) > 48 {
		return store{}, fmt.Errorf("httpcall: prefix %q: want [a-z0-9_]{0,48}", prefix)
	}
	return store{sqlite: d.Name() == "sqlite", table: prefix + "http_intents"}, nil
}

// q substitutes the table and, on SQLite, the placeholders.
func (s store) q(query string) string {
	query = strings.ReplaceAll(query, "{t}", s.table)
	if s.sqlite {
		for i := 9; i >= 1; i-- {
			query = strings.ReplaceAll(query, fmt.Sprintf("$%d", i), "?")
		}
	}
	return query
}

const intentCols = `target, resource, operation_id, fence, seq, idem_key, method, url, request_digest, outcome`

func (s store) migrate(ctx context.Context, db *sql.DB) error {
	_, err := db.ExecContext(ctx, s.q(`CREATE TABLE IF NOT EXISTS {t} (
  target TEXT NOT NULL, resource TEXT NOT NULL, operation_id TEXT NOT NULL, fence BIGINT NOT NULL, seq BIGINT NOT NULL,
  idem_key TEXT NOT NULL UNIQUE, method TEXT NOT NULL, url TEXT NOT NULL, request_digest TEXT NOT NULL,
  outcome TEXT NOT NULL DEFAULT '', PRIMARY KEY (target, resource, fence, seq))`))
	if err != nil {
		return fmt.Errorf("httpcall: migrate: %w", err)
	}
	return nil
}

func (s store) insert(ctx context.Context, tx *sql.Tx, in Intent) error {
	_, err := tx.ExecContext(ctx, s.q(`INSERT INTO {t} (`+intentCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, '')`),
		in.Target, in.Resource, in.OperationID, int64(in.FenceToken), int64(in.SegmentSeq), in.Key, in.Method, in.URL, in.RequestDigest.String())
	if err != nil {
		return fmt.Errorf("httpcall: record intent: %w", err)
	}
	return nil
}

// setOutcome records what became of a call. It is advice for the
// recoverer's worklist, not evidence (the receipt and the effect query
// are): a failure to record it is ignored, leaving the intent unresolved.
func (s store) setOutcome(ctx context.Context, db *sql.DB, in Intent, outcome string) {
	db.ExecContext(ctx, s.q(`UPDATE {t} SET outcome = $1 WHERE idem_key = $2`), outcome, in.Key)
}

func (s store) load(ctx context.Context, db *sql.DB, target, resource string, fence, seq uint64) (Intent, error) {
	rows, err := db.QueryContext(ctx, s.q(`SELECT `+intentCols+` FROM {t} WHERE target = $1 AND resource = $2 AND fence = $3 AND seq = $4`),
		target, resource, int64(fence), int64(seq))
	ins, err := scanIntents(rows, err)
	if err != nil {
		return Intent{}, err
	}
	if len(ins) == 0 {
		return Intent{}, fmt.Errorf("httpcall: no intent for %s %s fence %d segment %d: %w", target, resource, fence, seq, sql.ErrNoRows)
	}
	return ins[0], nil
}

func (s store) unresolved(ctx context.Context, db *sql.DB, target string) ([]Intent, error) {
	return scanIntents(db.QueryContext(ctx, s.q(`SELECT `+intentCols+` FROM {t} WHERE target = $1 AND outcome IN ('', 'UNKNOWN', 'UNDETERMINED') ORDER BY resource, fence, seq`), target))
}

func scanIntents(rows *sql.Rows, err error) ([]Intent, error) {
	if err != nil {
		return nil, fmt.Errorf("httpcall: read intents: %w", err)
	}
	defer rows.Close()
	var out []Intent
	for rows.Next() {
		var in Intent
		var fence, seq int64
		var digest string
		if err := rows.Scan(&in.Target, &in.Resource, &in.OperationID, &fence, &seq, &in.Key, &in.Method, &in.URL, &digest, &in.Outcome); err != nil {
			return nil, fmt.Errorf("httpcall: read intents: %w", err)
		}
		in.FenceToken, in.SegmentSeq = uint64(fence), uint64(seq)
		if in.RequestDigest, err = grant.ParseDigest(digest); err != nil {
			return nil, fmt.Errorf("httpcall: stored request digest: %w", err)
		}
		out = append(out, in)
	}
	return out, rows.Err()
}
