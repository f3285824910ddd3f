// This file proves the reconciliation queue is durable (items survive a
// reopen), bounded, idempotent per write, measures its oldest age, and
// alarms exactly once per item whose deadline passed.
package reconcile_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/client/reconcile"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/fakeclock"
	"github.com/prometheus/client_golang/prometheus"
)

func item(op string, seq uint64) reconcile.Item {
	return reconcile.Item{Resource: "invoice-batch/1", OperationID: op, FenceToken: 3, SegmentSeq: seq,
		PayloadDigest: grant.OperationRoot("x", op)}
}

func TestQueueDurableIdempotentBoundedAlarmed(t *testing.T) {
	ctx := context.Background()
	c := fakeclock.New(time.Date(2026, 7, 19, 10, 0, 0, 0, time.UTC))
	path := filepath.Join(t.TempDir(), "q.db")
	var alarms []reconcile.Item
	opts := reconcile.Options{Clock: c, ItemsMax: 2, OnAlarm: func(it reconcile.Item) { alarms = append(alarms, it) }}
	q, err := reconcile.Open(ctx, path, opts)
	if err != nil {
		t.Fatal(err)
	}
	first, err := q.Enqueue(ctx, item("op-1", 2))
	if err != nil {
		t.Fatal(err)
	}
	if !first.Deadline.Equal(c.Now().Add(reconcile.DeadlineDefault)) {
		t.Fatalf("deadline %s, want enqueue + 15 min", first.Deadline)
	}
	c.Advance(time.Minute)
	again, err := q.Enqueue(ctx, item("op-1", 2))
	if err != nil || again.ID != first.ID || !again.Deadline.Equal(first.Deadline) {
		t.Fatalf("re-enqueue: %+v %v: want the same item and deadline", again, err)
	}
	if _, err := q.Enqueue(ctx, item("op-2", 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Enqueue(ctx, item("op-3", 1)); !errors.Is(err, reconcile.ErrFull) {
		t.Fatalf("third item with ItemsMax 2: %v, want ErrFull", err)
	}
	q.Close()

	q, err = reconcile.Open(ctx, path, opts) // a restart: nothing is lost
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	open, err := q.Open(ctx)
	if err != nil || len(open) != 2 || open[0].ID != first.ID || open[0].PayloadDigest != first.PayloadDigest {
		t.Fatalf("after reopen: %+v %v", open, err)
	}
	if age, _ := q.OldestAge(ctx); age != time.Minute {
		t.Fatalf("oldest age %s, want 1m", age)
	}
	c.Advance(reconcile.DeadlineDefault)
	for range 2 {
		if _, err := q.CheckDeadlines(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if len(alarms) != 2 {
		t.Fatalf("%d alarms, want one per overdue item", len(alarms))
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(q.Collectors()...)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	gauges := map[string]float64{}
	for _, mf := range mfs {
		gauges[mf.GetName()] = mf.GetMetric()[0].GetGauge().GetValue()
	}
	if gauges["fencegate_client_reconcile_overdue_items"] != 2 || gauges["fencegate_client_reconcile_open_items"] != 2 ||
		gauges["fencegate_client_reconcile_oldest_age_seconds"] != (time.Minute+reconcile.DeadlineDefault).Seconds() {
		t.Fatalf("metrics %v", gauges)
	}
	if err := q.Resolve(ctx, first.ID, "ACCEPTED"); err != nil {
		t.Fatal(err)
	}
	if err := q.Resolve(ctx, first.ID, "ACCEPTED"); !errors.Is(err, reconcile.ErrNotFound) {
		t.Fatalf("resolving twice: %v", err)
	}
	if n, overdue, _ := q.Counts(ctx); n != 1 || overdue != 1 {
		t.Fatalf("counts %d/%d, want 1/1", n, overdue)
	}
	// A queue that cannot be read fails the scrape with the cause; it
	// never reports a healthy 0.
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Gather(); err == nil || !strings.Contains(err.Error(), "reconcile: oldest age") || !strings.Contains(err.Error(), "reconcile: counts") {
		t.Fatalf("scrape of a closed queue: %v, want the read errors", err)
	}
}

func TestDeadlineCountsFromWhenTheOutcomeBecameUnknown(t *testing.T) {
	ctx := context.Background()
	c := fakeclock.New(time.Date(2026, 7, 19, 10, 0, 0, 0, time.UTC))
	q, err := reconcile.Open(ctx, filepath.Join(t.TempDir(), "q.db"), reconcile.Options{Clock: c})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	it := item("op-1", 1)
	it.EnqueuedAt = c.Now().Add(-5 * time.Minute)
	got, err := q.Enqueue(ctx, it)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Deadline.Equal(it.EnqueuedAt.Add(reconcile.DeadlineDefault)) {
		t.Fatalf("deadline %s, want loss + 15 min", got.Deadline)
	}
	if age, _ := q.OldestAge(ctx); age != 5*time.Minute {
		t.Fatalf("oldest age %s, want 5m", age)
	}
}
