// Package reconcile is the durable queue of writes whose outcome could not
// be established (MUTATION_UNKNOWN, verdict UNDETERMINED). Each item has a
// deadline, 15 minutes by default: the specification's "UNKNOWN reconciled
// within 15 minutes". The age of the oldest open item is a metric, and an
// alarm hook fires once for every item whose deadline passes.
//
// The queue is a small SQLite file (modernc.org/sqlite, no cgo). It stores
// and times items; it does not decide them. client.Resolver re-asks the
// resource's receipts and closes items with Reconcile.
package reconcile

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/fencegate/fencegate/clock"
	"net/url"
	"sync"
	"time"

	"github.com/fencegate/fencegate/grant"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Named limits.
const (
	// DeadlineDefault is how long an item may stay open before it alarms.
	DeadlineDefault = 15 * time.Minute
	// ItemsMaxDefault bounds open items; Enqueue fails with ErrFull beyond
	// it rather than growing without limit.
	ItemsMaxDefault = 10000
	// BusyTimeoutMs is how long a connection waits for SQLite's write lock.
	BusyTimeoutMs = 5000
)

// Errors.
var (
	// ErrFull: ItemsMax items are open.
	ErrFull = errors.New("reconcile: queue full")
	// ErrNotFound: no open item with that ID.
	ErrNotFound = errors.New("reconcile: item not found")
)

// Clock is the queue's time source (the module's one clock interface).
type Clock = clock.Clock

// Options configure a Queue. Zero fields take their defaults.
type Options struct {
	// Clock. Optional, defaults to the system clock.
	Clock Clock
	// Deadline is how long an item may stay open. Optional, defaults to
	// DeadlineDefault (15 min).
	Deadline time.Duration
	// ItemsMax bounds open items. Optional, defaults to ItemsMaxDefault.
	ItemsMax int
	// OnAlarm is called once per item whose deadline passed, from
	// CheckDeadlines (and Reconcile). Optional: without it the alarm is
	// only visible in the metrics and in Item.Alarmed.
	OnAlarm func(Item)
}

// Item is one write whose outcome is unknown.
type Item struct {
	ID            int64
	Resource      string
	OperationID   string
	FenceToken    uint64
	SegmentSeq    uint64 // 0: the whole operation
	PayloadDigest grant.Digest
	EnqueuedAt    time.Time // when the outcome became unknown: Enqueue takes it if set, else now
	Deadline      time.Time // EnqueuedAt + Options.Deadline
	Attempts      int       // reconciliation attempts so far
	LastError     string    // why the last attempt did not settle it
	Alarmed       bool      // the deadline passed and the alarm fired
}

// Queue is the durable queue. Safe for concurrent use.
type Queue struct {
	db   *sql.DB
	o    Options
	mu   sync.Mutex // serializes CheckDeadlines so an alarm fires once
	path string
}

// Open opens (creating if needed) the queue in the SQLite file at path.
func Open(ctx context.Context, path string, o Options) (*Queue, error) {
	if o.Clock == nil {
		o.Clock = clock.System{}
	}
	if o.Deadline <= 0 {
		o.Deadline = DeadlineDefault
	}
	if o.ItemsMax <= 0 {
		o.ItemsMax = ItemsMaxDefault
	}
	v := url.Values{}
	v.Add("_pragma", "journal_mode(WAL)")
	v.Add("_pragma", "synchronous(FULL)")
	v.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", BusyTimeoutMs))
	v.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+v.Encode())
	if err != nil {
		return nil, fmt.Errorf("reconcile: open %s: %w", path, err)
	}
	if _, err := db.ExecContext(ctx, schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("reconcile: open %s: schema: %w", path, err)
	}
	return &Queue{db: db, o: o, path: path}, nil
}

const schema = `
CREATE TABLE IF NOT EXISTS reconcile_items (
	id INTEGER PRIMARY KEY,
	resource TEXT NOT NULL,
	operation_id TEXT NOT NULL,
	fence INTEGER NOT NULL,
	segment_seq INTEGER NOT NULL,
	payload_digest TEXT NOT NULL,
	enqueued_at_ms INTEGER NOT NULL,
	deadline_ms INTEGER NOT NULL,
	attempts INTEGER NOT NULL DEFAULT 0,
	last_error TEXT NOT NULL DEFAULT '',
	alarmed_at_ms INTEGER,
	resolved_at_ms INTEGER,
	verdict TEXT NOT NULL DEFAULT '',
	UNIQUE (resource, operation_id, fence, segment_seq)
);
CREATE INDEX IF NOT EXISTS reconcile_items_open ON reconcile_items (resolved_at_ms, enqueued_at_ms);
`

// Close closes the database.
func (q *Queue) Close() error { return q.db.Close() }

// Options returns the options in force.
func (q *Queue) Options() Options { return q.o }

// Enqueue adds it and returns the stored item. Only the identity, the
// payload digest and EnqueuedAt (optional: when the outcome became unknown,
// so the deadline counts from the loss, not from the enqueue) are taken
// from it; the queue sets the rest. Enqueuing the same (resource,
// operation, fence, segment) again returns the existing item unchanged,
// so its deadline is never pushed back.
func (q *Queue) Enqueue(ctx context.Context, it Item) (Item, error) {
	now := q.o.Clock.Now()
	if !it.EnqueuedAt.IsZero() && it.EnqueuedAt.Before(now) {
		now = it.EnqueuedAt
	}
	tx, err := q.db.BeginTx(ctx, nil)
	if err != nil {
		return Item{}, fmt.Errorf("reconcile: enqueue: %w", err)
	}
	defer tx.Rollback()
	var open int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM reconcile_items WHERE resolved_at_ms IS NULL`).Scan(&open); err != nil {
		return Item{}, fmt.Errorf("reconcile: enqueue: %w", err)
	}
	if existing, err := scanOne(tx.QueryRowContext(ctx, selectItem+` WHERE resource = ? AND operation_id = ? AND fence = ? AND segment_seq = ?`,
		it.Resource, it.OperationID, int64(it.FenceToken), int64(it.SegmentSeq))); err == nil {
		return existing, nil
	} else if !errors.Is(err, sql.ErrNoRows) {
		return Item{}, fmt.Errorf("reconcile: enqueue: %w", err)
	}
	if open >= q.o.ItemsMax {
		return Item{}, fmt.Errorf("%w: %d open items", ErrFull, open)
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO reconcile_items
		(resource, operation_id, fence, segment_seq, payload_digest, enqueued_at_ms, deadline_ms) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		it.Resource, it.OperationID, int64(it.FenceToken), int64(it.SegmentSeq), it.PayloadDigest.String(),
		now.UnixMilli(), now.Add(q.o.Deadline).UnixMilli())
	if err != nil {
		return Item{}, fmt.Errorf("reconcile: enqueue: %w", err)
	}
	id, _ := res.LastInsertId()
	if err := tx.Commit(); err != nil {
		return Item{}, fmt.Errorf("reconcile: enqueue: commit: %w", err)
	}
	it.ID, it.EnqueuedAt, it.Deadline = id, time.UnixMilli(now.UnixMilli()).UTC(), time.UnixMilli(now.Add(q.o.Deadline).UnixMilli()).UTC()
	it.Attempts, it.LastError, it.Alarmed = 0, "", false
	return it, nil
}
