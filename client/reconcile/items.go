package reconcile

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/fencegate/fencegate/grant"
)

const selectItem = `SELECT id, resource, operation_id, fence, segment_seq, payload_digest, enqueued_at_ms,
	deadline_ms, attempts, last_error, alarmed_at_ms IS NOT NULL FROM reconcile_items`

type scanner interface{ Scan(dest ...any) error }

func scanOne(s scanner) (Item, error) {
	var it Item
	var fence, seq, enq, dl int64
	var digest string
	if err := s.Scan(&it.ID, &it.Resource, &it.OperationID, &fence, &seq, &digest, &enq, &dl,
		&it.Attempts, &it.LastError, &it.Alarmed); err != nil {
		return Item{}, err
	}
	d, err := grant.ParseDigest(digest)
	if err != nil {
		return Item{}, fmt.Errorf("reconcile: item %d: payload digest: %w", it.ID, err)
	}
	it.FenceToken, it.SegmentSeq, it.PayloadDigest = uint64(fence), uint64(seq), d
	it.EnqueuedAt, it.Deadline = time.UnixMilli(enq).UTC(), time.UnixMilli(dl).UTC()
	return it, nil
}

// Open returns the open items, oldest first.
func (q *Queue) Open(ctx context.Context) ([]Item, error) {
	return q.list(ctx, ` WHERE resolved_at_ms IS NULL ORDER BY enqueued_at_ms, id`)
}

func (q *Queue) list(ctx context.Context, where string, args ...any) ([]Item, error) {
	rows, err := q.db.QueryContext(ctx, selectItem+where, args...)
	if err != nil {
		return nil, fmt.Errorf("reconcile: list: %w", err)
	}
	defer rows.Close()
	var out []Item
	for rows.Next() {
		it, err := scanOne(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, it)
	}
	return out, rows.Err()
}

// Resolve closes the open item id with the verdict that settled it
// (ACCEPTED or PROVEN_ABSENT, or an operator's note). Closed items are
// kept as a record.
func (q *Queue) Resolve(ctx context.Context, id int64, verdict string) error {
	res, err := q.db.ExecContext(ctx, `UPDATE reconcile_items SET resolved_at_ms = ?, verdict = ?
		WHERE id = ? AND resolved_at_ms IS NULL`, q.o.Clock.Now().UnixMilli(), verdict, id)
	if err != nil {
		return fmt.Errorf("reconcile: resolve %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: %d", ErrNotFound, id)
	}
	return nil
}

// Attempted records an attempt that did not settle item id.
func (q *Queue) Attempted(ctx context.Context, id int64, why string) error {
	_, err := q.db.ExecContext(ctx, `UPDATE reconcile_items SET attempts = attempts + 1, last_error = ?
		WHERE id = ? AND resolved_at_ms IS NULL`, why, id)
	if err != nil {
		return fmt.Errorf("reconcile: attempted %d: %w", id, err)
	}
	return nil
}

// OldestAge is the age of the oldest open item by the queue's clock, 0
// when none is open: the metric that must stay under the deadline.
func (q *Queue) OldestAge(ctx context.Context) (time.Duration, error) {
	var oldest sql.NullInt64
	if err := q.db.QueryRowContext(ctx, `SELECT min(enqueued_at_ms) FROM reconcile_items WHERE resolved_at_ms IS NULL`).Scan(&oldest); err != nil {
		return 0, fmt.Errorf("reconcile: oldest age: %w", err)
	}
	if !oldest.Valid {
		return 0, nil
	}
	return max(0, time.Duration(q.o.Clock.Now().UnixMilli()-oldest.Int64)*time.Millisecond), nil
}

// Counts returns how many items are open and how many of those are
// overdue (past their deadline).
func (q *Queue) Counts(ctx context.Context) (open, overdue int, err error) {
	err = q.db.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(deadline_ms <= ?), 0) FROM reconcile_items
		WHERE resolved_at_ms IS NULL`, q.o.Clock.Now().UnixMilli()).Scan(&open, &overdue)
	if err != nil {
		return 0, 0, fmt.Errorf("reconcile: counts: %w", err)
	}
	return open, overdue, nil
}

// CheckDeadlines marks every open item whose deadline passed and has not
// alarmed yet, calls OnAlarm once for each, and returns them.
func (q *Queue) CheckDeadlines(ctx context.Context) ([]Item, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.o.Clock.Now().UnixMilli()
	due, err := q.list(ctx, ` WHERE resolved_at_ms IS NULL AND alarmed_at_ms IS NULL AND deadline_ms <= ? ORDER BY enqueued_at_ms, id`, now)
	if err != nil {
		return nil, err
	}
	for i := range due {
		if _, err := q.db.ExecContext(ctx, `UPDATE reconcile_items SET alarmed_at_ms = ? WHERE id = ?`, now, due[i].ID); err != nil {
			return nil, fmt.Errorf("reconcile: alarm %d: %w", due[i].ID, err)
		}
		due[i].Alarmed = true
		if q.o.OnAlarm != nil {
			q.o.OnAlarm(due[i])
		}
	}
	return due, nil
}
