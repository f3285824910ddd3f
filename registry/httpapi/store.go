package httpapi

import (
	"context"
	"time"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
)

// InstrumentStore wraps s so that every Read, Commit, scan and key
// history call is timed into m's store-latency histogram (op "read",
// "read_set", "commit", "scan", "scan_records", "scan_sweep", "read_key_history",
// "commit_key_history"; outcome "ok", "conflict" for a failed compare, or the error's code).
// Watch is passed through untimed: its latency is the wait for a change.
// The wrapper changes no result.
func InstrumentStore(s registry.Store, m *Metrics) registry.Store {
	return &timedStore{s: s, m: m}
}

type timedStore struct {
	s registry.Store
	m *Metrics
}

// storeOutcome is "" on success, or the error's wire code.
func storeOutcome(err error) string {
	if err == nil {
		return ""
	}
	return codeOf(err)
}

func (t *timedStore) Read(ctx context.Context, resource string, keys []lockstate.RequestKey) (registry.Snapshot, error) {
	start := time.Now()
	snap, err := t.s.Read(ctx, resource, keys)
	t.m.StoreCall("read", time.Since(start), storeOutcome(err))
	return snap, err
}

func (t *timedStore) Commit(ctx context.Context, w registry.Write) (registry.CommitResult, error) {
	start := time.Now()
	res, err := t.s.Commit(ctx, w)
	outcome := storeOutcome(err)
	if err == nil && !res.OK {
		outcome = "conflict"
	}
	t.m.StoreCall("commit", time.Since(start), outcome)
	return res, err
}

func (t *timedStore) Watch(ctx context.Context, resource string, fromRev uint64) (<-chan registry.RecordEvent, error) {
	return t.s.Watch(ctx, resource, fromRev)
}

func (t *timedStore) ScanRequests(ctx context.Context, after lockstate.RequestKey, limit int) ([]registry.RequestSlot, error) {
	start := time.Now()
	slots, err := t.s.ScanRequests(ctx, after, limit)
	t.m.StoreCall("scan", time.Since(start), storeOutcome(err))
	return slots, err
}

func (t *timedStore) ScanRecords(ctx context.Context, prefix, after string, limit int) ([]registry.RecordSlot, error) {
	start := time.Now()
	slots, err := t.s.ScanRecords(ctx, prefix, after, limit)
	t.m.StoreCall("scan_records", time.Since(start), storeOutcome(err))
	return slots, err
}

func (t *timedStore) ScanSweep(ctx context.Context, after registry.SweepItem, beforeMs int64, limit int) ([]registry.SweepItem, error) {
	start := time.Now()
	items, err := t.s.ScanSweep(ctx, after, beforeMs, limit)
	t.m.StoreCall("scan_sweep", time.Since(start), storeOutcome(err))
	return items, err
}

func (t *timedStore) ReadKeyHistory(ctx context.Context) (registry.KeyHistorySlot, error) {
	start := time.Now()
	slot, err := t.s.ReadKeyHistory(ctx)
	t.m.StoreCall("read_key_history", time.Since(start), storeOutcome(err))
	return slot, err
}

func (t *timedStore) CommitKeyHistory(ctx context.Context, w registry.KeyHistoryWrite) (registry.KeyHistoryResult, error) {
	start := time.Now()
	res, err := t.s.CommitKeyHistory(ctx, w)
	outcome := storeOutcome(err)
	if err == nil && !res.OK {
		outcome = "conflict"
	}
	t.m.StoreCall("commit_key_history", time.Since(start), outcome)
	return res, err
}

func (t *timedStore) ReadSet(ctx context.Context, resources []string, keys []lockstate.RequestKey) (registry.Snapshot, error) {
	start := time.Now()
	snap, err := t.s.ReadSet(ctx, resources, keys)
	t.m.StoreCall("read_set", time.Since(start), storeOutcome(err))
	return snap, err
}
