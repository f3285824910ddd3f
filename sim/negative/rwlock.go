package negative

import (
	"context"
	"slices"
	"strings"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
)

// The read/write lock rounds' store controls (sim.RunRWLocks): each is
// the registry's store with one change to every record a write puts,
// made on the way in, so the registry decides its next write on what was
// committed (its cached copy fails one compare, then it reads). None
// changes product code.

// rewriting is a store that passes each write's record through edit
// (on a copy) before committing it.
type rewriting struct {
	registry.Store
	edit func(*lockstate.Record)
}

func (s rewriting) Commit(ctx context.Context, w registry.Write) (registry.CommitResult, error) {
	if w.Record != nil {
		rec := w.Record.Clone()
		s.edit(rec)
		w.Record = rec
	}
	return s.Store.Commit(ctx, w)
}

// noHoldBackStore is the no-hold-back control: a store that drops a
// downgrade's ReadersFromMs from every record it commits, so readers are
// admitted while the write lease's HELD statements are still valid (the
// rounds count sim.RWLockCounts.ReaderEarly).
func noHoldBackStore(s registry.Store) registry.Store {
	return rewriting{s, func(rec *lockstate.Record) { rec.ReadersFromMs = 0 }}
}

// sharedReadLeaseStore is the shared-read-lease control: a store that
// gives every reader of a record the latest expiry among them, as if the
// readers shared one lease that any of them renews (Redisson's read lock
// kept a dead instance's share alive while another renewed,
// redisson#7098). A dead reader's share then outlives its own TTL
// (sim.RWLockCounts.ReaderPastTTL).
func sharedReadLeaseStore(s registry.Store) registry.Store {
	return rewriting{s, func(rec *lockstate.Record) {
		var latest int64
		for _, h := range rec.Readers {
			latest = max(latest, h.ExpiresAtMs)
		}
		for i := range rec.Readers {
			rec.Readers[i].ExpiresAtMs = latest
		}
	}}
}

// readersFirstStore is the readers-first control: a store that moves
// readers' tickets ahead of writers' in every queue it commits (keeping
// each kind's order), so a reader that queued behind a writer is admitted
// past it — reader preference, under which a steady stream of readers
// starves writers (sim.RWLockCounts.Jumped).
func readersFirstStore(s registry.Store) registry.Store {
	return rewriting{s, func(rec *lockstate.Record) {
		slices.SortStableFunc(rec.Waiters, func(a, b lockstate.Waiter) int {
			switch {
			case a.Read == b.Read:
				return 0
			case a.Read:
				return -1
			}
			return 1
		})
	}}
}

// forgetDowngradeStore is the forget-downgrade control: a store that
// drops the request entry a downgrade writes (request IDs ending
// ".down", as the read/write lock rounds name them), so the registry
// cannot answer a retry of the downgrade with the reader's grant it
// made (sim.RWLockCounts.DowngradeGap, violations "downgrade-retry").
func forgetDowngradeStore(s registry.Store) registry.Store { return forgetDowngrade{s} }

type forgetDowngrade struct{ registry.Store }

func (s forgetDowngrade) Commit(ctx context.Context, w registry.Write) (registry.CommitResult, error) {
	keep := w.Requests[:0:0]
	for _, r := range w.Requests {
		if !strings.HasSuffix(r.Key.RequestID, ".down") {
			keep = append(keep, r)
		}
	}
	w.Requests = keep
	return s.Store.Commit(ctx, w)
}
