package registry

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/wire"
)

// Limits of the retention sweep.
const (
	// SweepScanMax is how many sweep index items (or, for
	// IndexRequests, request entries) one page of a sweep reads.
	SweepScanMax = 512
	// sweepWindowMs bounds the due time one scan of the sweep index
	// spans, 1 s to start with: an etcd range counts the keys to its end
	// (where it cannot stream), so a scan over the whole backlog would
	// cost the backlog on every page. A window that held under a quarter
	// of a page doubles the next, up to sweepWindowMaxMs (10 min), and
	// one that took more than a page halves it: a sparse index costs a
	// few scans and commits a page, not one a second of due time.
	sweepWindowMs    = 1000
	sweepWindowMaxMs = 600_000
	// sweepReadsParallelMax bounds the concurrent reads that judge one
	// page; sweepWriteEntriesMax bounds the items one sweep write
	// carries, well under etcd's default --max-txn-ops of 128 (two
	// operations an item, and a read of each compared entry on failure).
	sweepReadsParallelMax = 16
	sweepWriteEntriesMax  = 32
)

// SweepIntervalDefault is how often serve runs SweepRequests
// (SweepLoop's interval), 10 s of the registry clock: a pass reads only
// what came due since the last, so a short interval keeps each pass
// small, and an entry outlives its retention by at most this.
const SweepIntervalDefault = 10 * time.Second

// SweepRequests runs one pass of the retention sweep at the registry
// clock's now and returns how many request entries it deleted. It walks
// the sweep index (Store.ScanSweep) from its oldest end up to now; for
// each item it reads the entry with its resource's record and asks
// lockstate.JudgeSweep: an entry whose lease ended more than
// Config.RequestRetentionMs ago is deleted with its item, any other has
// its item moved to the first instant it could be due. It reads what is
// due, never the whole index (docs/operations.md, "Request retention").
// Entries of live grants are never deleted; each delete compares the
// entry's revision, so an entry that changed meanwhile is left alone. A
// holder past its expiry with no write to say so makes the sweep settle
// its resource (write down the expiry the clock already decided) before
// judging the entry.
func (r *Registry) SweepRequests(ctx context.Context) (int, error) {
	now := r.now()
	deleted, after, window := 0, SweepItem{}, int64(sweepWindowMs)
	for {
		head, err := r.store.ScanSweep(ctx, after, now+1, 1)
		if err != nil || len(head) == 0 {
			return deleted, storeErrorOrNil("scan sweep index", err)
		}
		before, held := min(now+1, head[0].AtMs+window), 0
		for {
			page, err := r.store.ScanSweep(ctx, after, before, SweepScanMax)
			if err != nil {
				return deleted, storeError("scan sweep index", err)
			}
			n, err := r.sweepPage(ctx, page, now)
			if deleted, held = deleted+n, held+len(page); err != nil {
				return deleted, err
			}
			if len(page) < SweepScanMax {
				after = SweepItem{AtMs: before} // the window is done: on from its end
				break
			}
			after = page[len(page)-1]
		}
		window = nextSweepWindow(window, held)
	}
}

// nextSweepWindow is the due time the next window spans after one of
// window held items (sweepWindowMs).
func nextSweepWindow(window int64, held int) int64 {
	switch {
	case held < SweepScanMax/4:
		return min(2*window, sweepWindowMaxMs)
	case held > SweepScanMax:
		return max(window/2, sweepWindowMs)
	}
	return window
}

func storeErrorOrNil(op string, err error) error {
	if err == nil {
		return nil
	}
	return storeError(op, err)
}

// sweepVerdict is one item judged: the entry as read (Entry nil: gone),
// whether it is due, and when to look again if not; keep leaves the item
// as it is (it could not be judged now); ended, when set, is the entry
// written again with its end (lockstate.EndedEntry) as its item moves.
type sweepVerdict struct {
	item  SweepItem
	slot  RequestSlot
	due   bool
	next  int64
	keep  bool
	ended *lockstate.RequestEntry
}

// sweepPage judges page's items (at most sweepReadsParallelMax reads at
// a time) and commits the verdicts.
func (r *Registry) sweepPage(ctx context.Context, page []SweepItem, now int64) (int, error) {
	verdicts := make([]sweepVerdict, len(page))
	errs := make([]error, len(page))
	sem := make(chan struct{}, sweepReadsParallelMax)
	var wg sync.WaitGroup
	for i, it := range page {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			verdicts[i], errs[i] = r.judgeSweep(ctx, it, now)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return 0, err
		}
	}
	return r.commitVerdicts(ctx, verdicts)
}

// judgeSweep reads item's entry with its resource's record and judges it
// at now, settling the resource first when its holder is this entry's
// lease, expired by the clock with no write yet.
func (r *Registry) judgeSweep(ctx context.Context, it SweepItem, now int64) (sweepVerdict, error) {
	v := sweepVerdict{item: it}
	s, err := r.readEntry(ctx, &v)
	if err != nil || v.slot.Entry == nil {
		return v, err // gone (deleted with another item of it): drop this one
	}
	rec := recordOf(&s)
	if next, _ := lockstate.Normalize(rec, s.Settings, now, r.lim); lockstate.HoldsEntry(rec, v.slot.Entry) && !lockstate.HoldsEntry(next, v.slot.Entry) {
		// Ended by the clock with no write yet: write it down, so the
		// record says when, and judge the record it left. A store out of
		// space takes no such write: leave the item for a later sweep.
		if err := r.settle(ctx, v.item.Resource); errors.Is(err, wire.ErrStoreFull) {
			v.keep = true
			return v, nil
		} else if err != nil {
			return v, err
		}
		if s, err = r.readEntry(ctx, &v); err != nil || v.slot.Entry == nil {
			return v, err
		}
		rec = recordOf(&s)
	}
	v.due, v.next = lockstate.JudgeSweep(rec, v.slot.Entry, now, r.lim)
	if !v.due {
		// Not due: write its end down, so that the next look finds it
		// due whatever the resource did meanwhile.
		if v.ended = lockstate.EndedEntry(rec, v.slot.Entry, r.lim); v.ended != nil {
			_, v.next = lockstate.JudgeSweep(rec, v.ended, now, r.lim)
		}
	}
	return v, nil
}

// readEntry reads v's entry with its resource's record into v.slot. An
// item naming another resource than its entry (the key granted again
// elsewhere after a purge) is read again there, once; the item's resource
// is corrected (items are named by instant and key alone).
func (r *Registry) readEntry(ctx context.Context, v *sweepVerdict) (Snapshot, error) {
	for range 2 {
		s, err := r.read(ctx, v.item.Resource, []lockstate.RequestKey{v.item.Key})
		if err != nil {
			return s, err
		}
		v.slot = s.Requests[0]
		if v.slot.Entry == nil || wire.RecordName(v.slot.Entry.Grant.Resource) == v.item.Resource {
			return s, nil
		}
		v.item.Resource = wire.RecordName(v.slot.Entry.Grant.Resource)
	}
	v.slot = RequestSlot{Key: v.item.Key} // moved again meanwhile: drop this item
	return Snapshot{}, nil
}

// commitVerdicts writes what the verdicts decided, sweepWriteEntriesMax
// items a write, the writes in flight together (so a grouping store sends
// them as one transaction). A write refused by a compare (another replica
// swept an entry first, or the settings moved) is tried again item by
// item; an item that still fails is left for the next sweep.
func (r *Registry) commitVerdicts(ctx context.Context, verdicts []sweepVerdict) (int, error) {
	set, err := r.read(ctx, "", nil)
	if err != nil {
		return 0, err
	}
	var (
		mu       sync.Mutex
		deleted  int
		firstErr error
		wg       sync.WaitGroup
	)
	commit := func(vs []sweepVerdict) {
		defer wg.Done()
		n, err := r.commitSweep(ctx, set.SettingsRev, vs, false)
		mu.Lock()
		defer mu.Unlock()
		deleted += n
		if firstErr == nil {
			firstErr = err
		}
	}
	for _, c := range splitVerdicts(onePerKey(verdicts), sweepWriteEntriesMax) {
		wg.Add(1)
		go commit(c)
	}
	wg.Wait()
	return deleted, firstErr
}

// commitSweep commits one chunk of verdicts; on a failed compare, each
// verdict alone (once, with the settings read again).
func (r *Registry) commitSweep(ctx context.Context, settingsRev uint64, vs []sweepVerdict, alone bool) (int, error) {
	w, n := sweepWrite(settingsRev, vs)
	if w == nil {
		return 0, nil
	}
	res, err := r.store.Commit(ctx, *w)
	switch {
	case err != nil && errors.Is(err, wire.ErrStoreFull) && hasMoves(vs):
		// Out of space the store may take deletes only (etcd's NOSPACE):
		// free what is due, and move the rest at the next sweep.
		return r.commitSweep(ctx, settingsRev, deletesOnly(vs), alone)
	case err != nil:
		return 0, storeError("sweep", err)
	case res.OK:
		return n, nil
	case alone:
		return 0, nil // left for the next sweep
	}
	set, err := r.read(ctx, "", nil)
	if err != nil {
		return 0, err
	}
	total := 0
	for i := range vs {
		n, err := r.commitSweep(ctx, set.SettingsRev, vs[i:i+1], true)
		if total += n; err != nil {
			return total, err
		}
	}
	return total, nil
}

// sweepWrite is the write of vs: a due entry is deleted (its revision
// compared) with its item; a live one's item moves to when it is next
// due, and an ended one is written again with its end (its revision
// compared); an item whose entry is gone is deleted (vs name each key
// once: onePerKey). It returns nil when there is nothing to write,
// and how many entries the write deletes.
func sweepWrite(settingsRev uint64, vs []sweepVerdict) (*Write, int) {
	w := &Write{SettingsRev: settingsRev}
	deletes := 0
	for _, v := range vs {
		if v.keep {
			continue
		}
		w.Sweeps = append(w.Sweeps, SweepWrite{Item: v.item, Delete: true})
		switch {
		case v.slot.Entry == nil:
		case v.due:
			w.Requests = append(w.Requests, RequestWrite{Key: v.item.Key, Compare: true, ModRev: v.slot.ModRev})
			deletes++
		default:
			if v.ended != nil {
				w.Requests = append(w.Requests, RequestWrite{Key: v.item.Key, Compare: true, ModRev: v.slot.ModRev, Entry: v.ended})
			}
			next := v.item
			next.AtMs = v.next
			w.Sweeps = append(w.Sweeps, SweepWrite{Item: next})
		}
	}
	if len(w.Sweeps) == 0 {
		return nil, 0
	}
	return w, deletes
}

func hasMoves(vs []sweepVerdict) bool {
	for _, v := range vs {
		if v.slot.Entry != nil && !v.due && !v.keep {
			return true
		}
	}
	return false
}

// deletesOnly drops the verdicts that move an item (the only puts of a
// sweep write, with the entries written again beside them).
func deletesOnly(vs []sweepVerdict) []sweepVerdict {
	var out []sweepVerdict
	for _, v := range vs {
		if !v.keep && (v.slot.Entry == nil || v.due) {
			out = append(out, v)
		}
	}
	return out
}

// onePerKey keeps the first verdict of each request key; a later item of
// the same key (two items of one entry: a reindex, or two replicas that
// moved it at once) only drops itself. No two writes of a page then touch
// one entry or put one item, which a store grouping them into one
// transaction would refuse.
func onePerKey(vs []sweepVerdict) []sweepVerdict {
	seen := make(map[lockstate.RequestKey]bool, len(vs))
	out := make([]sweepVerdict, len(vs))
	for i, v := range vs {
		if seen[v.item.Key] {
			v.slot.Entry = nil
		}
		seen[v.item.Key] = true
		out[i] = v
	}
	return out
}

func splitVerdicts(vs []sweepVerdict, n int) [][]sweepVerdict {
	var out [][]sweepVerdict
	for len(vs) > 0 {
		k := min(n, len(vs))
		out = append(out, vs[:k])
		vs = vs[k:]
	}
	return out
}

// IndexRequests gives every request entry in the store an item in the
// sweep index at its first look (lockstate.FirstSweepMs) and returns how
// many it wrote. Entries written by a version before the sweep index have
// none, and would never be swept; an entry that has one gets a second,
// which the sweep merges or drops when it comes due. SweepLoop calls it
// once when it finds entries but no index (the first start after an
// upgrade); serve --reindex-requests calls it after a rolling upgrade,
// whose older replicas wrote entries without items meanwhile.
func (r *Registry) IndexRequests(ctx context.Context) (int, error) {
	total, after := 0, lockstate.RequestKey{}
	for {
		page, err := r.store.ScanRequests(ctx, after, SweepScanMax)
		if err != nil || len(page) == 0 {
			return total, storeErrorOrNil("scan", err)
		}
		set, err := r.read(ctx, "", nil)
		if err != nil {
			return total, err
		}
		for len(page) > 0 {
			chunk := page[:min(len(page), 2*sweepWriteEntriesMax)]
			page = page[len(chunk):]
			w := Write{SettingsRev: set.SettingsRev}
			for _, sl := range chunk {
				if e := sl.Entry; e != nil {
					w.Sweeps = append(w.Sweeps, SweepWrite{Item: SweepItem{AtMs: lockstate.FirstSweepMs(e.Grant, r.lim), Key: sl.Key, Resource: wire.RecordName(e.Grant.Resource)}})
				}
				after = sl.Key
			}
			res, err := r.store.Commit(ctx, w)
			switch {
			case err != nil:
				return total, storeError("index", err)
			case !res.OK:
				return total, fmt.Errorf("%w: index: the settings moved; run it again", wire.ErrConflict)
			}
			total += len(w.Sweeps)
		}
	}
}

// unindexed reports whether the store holds request entries but no sweep
// index: written by a version before it.
func (r *Registry) unindexed(ctx context.Context) (bool, error) {
	items, err := r.store.ScanSweep(ctx, SweepItem{}, math.MaxInt64, 1)
	if err != nil || len(items) > 0 {
		return false, storeErrorOrNil("scan sweep index", err)
	}
	entries, err := r.store.ScanRequests(ctx, lockstate.RequestKey{}, 1)
	return len(entries) > 0, storeErrorOrNil("scan", err)
}

// SweepLoop sweeps (SweepRequests) every interval until ctx ends, which
// is its only way to return (with ctx's error). It first indexes the
// store's entries when they have no sweep index yet (IndexRequests).
// Errors of one sweep are passed to report (which may be nil) and the
// next sweep starts over.
func (r *Registry) SweepLoop(ctx context.Context, interval time.Duration, report func(deleted int, err error)) error {
	if interval <= 0 {
		return fmt.Errorf("%w: sweep interval %s", wire.ErrInvalid, interval)
	}
	indexed := false
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-r.clock.After(interval):
		}
		var err error
		if !indexed {
			var need bool
			if need, err = r.unindexed(ctx); err == nil && need {
				_, err = r.IndexRequests(ctx)
			}
			indexed = err == nil
		}
		total := 0
		if err == nil {
			total, err = r.SweepRequests(ctx)
		}
		if report != nil {
			report(total, err)
		}
	}
}

// settle writes down what the clock already decided on resource: a holder
// that expired or was revoked ends, dead waiters leave. Nothing else moves.
func (r *Registry) settle(ctx context.Context, resource string) error {
	_, _, err := r.casLoop(ctx, resource, nil, false, func(s *Snapshot, now int64) (*Write, error) {
		rec, changed := lockstate.Normalize(recordOf(s), s.Settings, now, r.lim)
		if !changed {
			return nil, nil
		}
		return r.writeFor(s, rec, nil), nil
	})
	return err
}
