package dashboard

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/wire"
)

// A lock is stuck when someone has queued for it too long, or one lease
// has held it too long. The registry says who holds and who waits, since
// when (a renewal keeps the lease's first grant time; a waiter keeps the
// time it joined the queue however many long polls it takes); the page
// compares those ages, at the registry's clock, with two thresholds.

// Default thresholds.
const (
	// StuckWaitMsDefault is 2 min. A crashed holder frees its resource
	// within its TTL plus lock-delay (15 s + 1 s with serve's defaults),
	// so a wait of eight default leases is not a crash being cleaned up:
	// a live holder keeps renewing while others queue, or a holder with
	// a long TTL died. Short enough to flag the four-minute wait that
	// once went unseen behind a renewing holder.
	StuckWaitMsDefault = 2 * 60 * 1000
	// StuckHoldMsDefault is 1 h. Work done under a lock (a settlement, a
	// migration, a report) takes minutes; a lease renewed for an hour is
	// usually a process whose work hung while its renewals go on. Teams
	// with longer jobs raise it.
	StuckHoldMsDefault = 60 * 60 * 1000
)

// StuckExemptClassesDefault are the operation classes never judged stuck:
// "lead", the class fencegate elect and client.Election campaign under.
// A leader holds for as long as it lives and its standbys queue behind
// it, by design.
var StuckExemptClassesDefault = []string{"lead"}

// stuckRules judge a lock against the thresholds.
type stuckRules struct {
	waitMs, holdMs int64
	exempt         []string
}

func newStuckRules(cfg Config) stuckRules {
	r := stuckRules{waitMs: int64(cfg.StuckWaitMs), holdMs: int64(cfg.StuckHoldMs), exempt: cfg.StuckExemptClasses}
	if r.waitMs <= 0 {
		r.waitMs = StuckWaitMsDefault
	}
	if r.holdMs <= 0 {
		r.holdMs = StuckHoldMsDefault
	}
	if r.exempt == nil {
		r.exempt = StuckExemptClassesDefault
	}
	return r
}

// row is the page's row of ls, judged at ls.ReadAt (the registry's clock
// at the read): a pure function of the lock and the rules.
func (s stuckRules) row(ls wire.LockStatus) ResourceRow {
	now := ls.ReadAt
	row := ResourceRow{Resource: ls.Resource, HighestFence: ls.HighestFence, Floor: ls.Floor,
		NextFence: max(ls.HighestFence, ls.Floor) + 1, Waiters: len(ls.Waiters)}
	if h := ls.Holder; h != nil {
		row.Holder, row.Lease, row.HolderFence, row.HolderClass = h.Owner, h.Lease, h.Fence, h.OperationClass
		row.HeldSince, row.HeldForMs, row.LeaseLeftMs = h.Since, age(now, h.Since), ls.Left().Milliseconds()
		row.HolderSet = h.LockSet
		row.StuckHold = row.HeldForMs > s.holdMs && !slices.Contains(s.exempt, h.OperationClass)
	} else if ls.FreeAt != nil && ls.FreeAt.After(now) {
		row.FreeInMs = ls.FreeAt.Sub(now).Milliseconds()
	}
	for i, w := range ls.Waiters {
		if i < waitersShownMax {
			row.WaiterOwners, row.WaiterSets = append(row.WaiterOwners, w.Owner), append(row.WaiterSets, w.LockSet)
			row.WaiterReads = append(row.WaiterReads, w.Read)
		}
		row.ReadWrite = row.ReadWrite || w.Read
		row.WriterQueued = row.WriterQueued || len(ls.Readers) > 0 && !w.Read
		if w.Since.IsZero() {
			continue // queued by a registry that did not record when: not judged
		}
		waited := age(now, w.Since)
		if row.LongestWaiter == "" || waited > row.LongestWaitMs {
			row.LongestWaiter, row.WaitingSince, row.LongestWaitMs = w.Owner, w.Since, waited
		}
		if waited > s.waitMs && waited > row.StuckWaitMs && !slices.Contains(s.exempt, w.OperationClass) {
			row.StuckWaiter, row.StuckWaitMs = w.Owner, waited
		}
	}
	s.readers(&row, ls)
	if ls.Permits > 0 {
		row.Permits = ls.Permits
		for _, sl := range ls.Slots {
			sr := s.row(sl)
			if sr.Holder != "" {
				row.SlotsHeld++
			}
			row.Slots = append(row.Slots, sr)
		}
	}
	return row
}

// readers adds a read/write lock's readers to row, each judged as a
// holder is.
func (s stuckRules) readers(row *ResourceRow, ls wire.LockStatus) {
	now := ls.ReadAt
	for _, h := range ls.Readers {
		rr := ResourceRow{Resource: wire.ReadResource(ls.Resource), Holder: h.Owner, Lease: h.Lease, HolderClass: h.OperationClass,
			HolderFence: h.Fence, HeldSince: h.Since, HeldForMs: age(now, h.Since), LeaseLeftMs: max(h.ExpiresAt.Sub(now), 0).Milliseconds()}
		rr.StuckHold = rr.HeldForMs > s.holdMs && !slices.Contains(s.exempt, h.OperationClass)
		row.Readers = append(row.Readers, rr)
	}
	row.ReadWrite = row.ReadWrite || len(ls.Readers) > 0
	if ls.ReadersFrom != nil && ls.ReadersFrom.After(now) {
		row.ReadersFromMs = ls.ReadersFrom.Sub(now).Milliseconds()
	}
}

// age is how long before now t was, in ms (0 if after).
func age(now, t time.Time) int64 { return max(now.Sub(t).Milliseconds(), 0) }

// Stuck reports whether the row shows a stuck wait or hold (a
// semaphore's: a stuck wait in its queue, or a stuck hold of a slot; a
// read/write lock's: a stuck wait, or a stuck hold by a reader).
func (r ResourceRow) Stuck() bool {
	return r.StuckWaiter != "" || r.StuckHold || slices.ContainsFunc(r.Slots, ResourceRow.Stuck) || slices.ContainsFunc(r.Readers, ResourceRow.Stuck)
}

// stuckAttention says what is stuck about row, for the attention list: a
// wait (bad: work is blocked) or, when nobody is stuck waiting, a long
// hold (warn).
func stuckAttention(r ResourceRow, waitMs, holdMs int64) []Attention {
	var out []Attention
	if r.StuckWaiter != "" {
		where := "; nobody holds it"
		switch {
		case r.Permits > 0:
			where = fmt.Sprintf(" in the semaphore's queue, %d of %d permits held", r.SlotsHeld, r.Permits)
		case r.Holder != "":
			where = fmt.Sprintf(" behind %s, held %s", r.Holder, ms(r.HeldForMs))
		case len(r.Readers) > 0:
			where = fmt.Sprintf(" behind %s, the longest held %s", plural(len(r.Readers), "reader"), ms(longestHeldMs(r.Readers)))
		case r.FreeInMs > 0:
			where = fmt.Sprintf("; nobody holds it (lock-delay %s left)", ms(r.FreeInMs))
		}
		more := ""
		if r.Waiters > 1 {
			more = fmt.Sprintf(" (%d waiting in all)", r.Waiters)
		}
		out = append(out, Attention{"bad", fmt.Sprintf("%s: %s has waited %s%s%s; stuck after %s",
			r.Resource, r.StuckWaiter, ms(r.StuckWaitMs), where, more, ms(waitMs))})
	}
	if r.StuckHold && r.StuckWaiter == "" {
		out = append(out, Attention{"warn", fmt.Sprintf("%s: held by %s for %s (since %s, lease %s, fence %d); stuck after %s",
			r.Resource, r.Holder, ms(r.HeldForMs), r.HeldSince.UTC().Format("15:04:05 UTC"), r.Lease, r.HolderFence, ms(holdMs))})
	}
	for _, sl := range r.Slots {
		out = append(out, stuckAttention(sl, waitMs, holdMs)...)
	}
	for _, rd := range r.Readers {
		for _, a := range stuckAttention(rd, waitMs, holdMs) {
			out = append(out, Attention{a.Level, strings.Replace(a.Text, ": held by ", ": read-held by ", 1)})
		}
	}
	return out
}

// longestHeldMs is how long the longest of rows has held.
func longestHeldMs(rows []ResourceRow) int64 {
	var out int64
	for _, r := range rows {
		out = max(out, r.HeldForMs)
	}
	return out
}

// plural is "1 reader", "2 readers".
func plural(n int, one string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %ss", n, one)
}

// Bounds of the lock scan.
const (
	// LockScanMax bounds one scan of the registry's locks (ListLocks), in
	// locks; it runs with discovery (DiscoveryIntervalMs, while the page
	// is watched) and continues where the last one stopped.
	LockScanMax = 2048
	// StuckTrackedMax bounds the stuck resources the scan keeps for the
	// page beyond the recently seen ones.
	StuckTrackedMax = ResourcesShownMax
)

// stuckSet is the resources a lock scan found stuck, shown whether or not
// they were seen recently: a lease renewed for hours was granted long
// ago. A row that reads not stuck drops its resource. Safe for
// concurrent use.
type stuckSet struct {
	mu     sync.Mutex
	names  map[string]bool
	cursor string // ListLocks's after
}

func newStuckSet() *stuckSet { return &stuckSet{names: map[string]bool{}} }

func (s *stuckSet) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.names))
	for n := range s.names {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// update keeps the stuck rows' resources (up to StuckTrackedMax) and
// drops the ones that read not stuck; a row that failed to read changes
// nothing.
func (s *stuckSet) update(rows []ResourceRow) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range rows {
		switch {
		case r.Err != "":
		case r.Stuck() && (s.names[r.Resource] || len(s.names) < StuckTrackedMax):
			s.names[r.Resource] = true
		case !r.Stuck():
			delete(s.names, r.Resource)
		}
	}
}

// scanLocks reads up to LockScanMax locks from where the last scan
// stopped, notes each held or waited-for resource as seen at its latest
// grant or queueing, and keeps the stuck ones for the page.
func (d *Dashboard) scanLocks(ctx context.Context) {
	s := d.stuck
	s.mu.Lock()
	after := s.cursor
	s.mu.Unlock()
	for read := 0; read < LockScanMax; {
		page, err := d.cfg.Registry.ListLocks(ctx, "", after, min(registry.ListLimitMax, LockScanMax-read), nil)
		if err != nil {
			if ctx.Err() == nil {
				d.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "dashboard: scan locks", slog.String("error", err.Error()))
			}
			return
		}
		rows := make([]ResourceRow, 0, len(page.Locks))
		for _, ls := range page.Locks {
			if at := lastActivity(ls); !at.IsZero() {
				d.known.note(ls.Resource, at.UnixMilli())
			}
			rows = append(rows, d.rules.row(ls))
		}
		s.update(rows)
		read += len(page.Locks)
		if after = page.Next; after == "" {
			break // walked to the end: start over next time
		}
	}
	s.mu.Lock()
	s.cursor = after
	s.mu.Unlock()
}

// lastActivity is when ls last changed hands, gained a reader or a
// waiter (zero for a free lock nobody waits for).
func lastActivity(ls wire.LockStatus) time.Time {
	var at time.Time
	if ls.Holder != nil {
		at = ls.Holder.Since
	}
	for _, h := range ls.Readers {
		if h.Since.After(at) {
			at = h.Since
		}
	}
	for _, w := range ls.Waiters {
		if w.Since.After(at) {
			at = w.Since
		}
	}
	return at
}
