package dashboard

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/wire"
)

// Bounds of the resource list.
const (
	// KnownResourcesMax is how many resource names are remembered; past
	// it the least recently seen is forgotten.
	KnownResourcesMax = 1024
	// ResourcesShownMax is how many resources the page reads and shows.
	ResourcesShownMax = 100
	// DiscoveryIntervalMs is how often, while the page is watched, the
	// request index is scanned for resources other replicas granted, 10 s.
	DiscoveryIntervalMs = 10_000
	// DiscoveryEntriesMax bounds one scan, in request entries (it
	// continues where the last one stopped).
	DiscoveryEntriesMax = 2048
	// readsParallelMax bounds the concurrent record reads of one refresh.
	readsParallelMax = 8
)

// knownSet is the resources the dashboard has heard of: named in an API
// call to this replica, in a gate's report, or found in the request
// index. The registry keeps no list of resources; this is the page's.
type knownSet struct {
	mu     sync.Mutex
	seen   map[string]int64 // resource → last seen, Unix ms
	cursor lockstate.RequestKey
}

func newKnownSet() *knownSet { return &knownSet{seen: map[string]int64{}} }

// note records that resource was seen at atMs. It runs after every API
// call: O(1), except that past KnownResourcesMax one pass keeps the
// newest half (amortized O(log n) per name).
func (k *knownSet) note(resource string, atMs int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if atMs <= k.seen[resource] {
		return
	}
	k.seen[resource] = atMs
	if len(k.seen) > KnownResourcesMax {
		keep := k.newestLocked(KnownResourcesMax / 2)
		k.seen = make(map[string]int64, KnownResourcesMax)
		for _, r := range keep {
			k.seen[r.name] = r.at
		}
	}
}

type seenAt struct {
	name string
	at   int64
}

// newestLocked returns the n most recently seen, newest first (ties by
// name).
func (k *knownSet) newestLocked(n int) []seenAt {
	all := make([]seenAt, 0, len(k.seen))
	for r, t := range k.seen {
		all = append(all, seenAt{r, t})
	}
	slices.SortFunc(all, func(a, b seenAt) int {
		if a.at != b.at {
			if a.at > b.at {
				return -1
			}
			return 1
		}
		return strings.Compare(a.name, b.name)
	})
	return all[:min(n, len(all))]
}

// recent returns up to n names, most recently seen first.
func (k *knownSet) recent(n int) []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []string
	for _, r := range k.newestLocked(n) {
		out = append(out, r.name)
	}
	return out
}

// discover scans up to DiscoveryEntriesMax request entries from where the
// last scan stopped; each names a resource some replica granted within
// the request retention (16 min by default), and every live grant
// has one.
func (d *Dashboard) discover(ctx context.Context) {
	k := d.known
	k.mu.Lock()
	after := k.cursor
	k.mu.Unlock()
	for read := 0; read < DiscoveryEntriesMax; {
		page, err := d.cfg.Store.ScanRequests(ctx, after, min(registry.SweepScanMax, DiscoveryEntriesMax-read))
		if err != nil {
			if ctx.Err() == nil {
				d.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "dashboard: scan request index", slog.String("error", err.Error()))
			}
			return
		}
		for _, sl := range page {
			if sl.Entry != nil {
				k.note(sl.Entry.Grant.Resource, sl.Entry.Grant.IssuedAtMs)
			}
		}
		read += len(page)
		if len(page) == 0 {
			after = lockstate.RequestKey{} // walked to the end: start over next time
			break
		}
		after = page[len(page)-1].Key
	}
	k.mu.Lock()
	k.cursor = after
	k.mu.Unlock()
}

// ResourceRow is one resource's lock as the registry answers it
// (Registry.LockStatus), judged at the read by the registry's clock: a
// lease past its expiry is over even before a write records it.
type ResourceRow struct {
	Resource     string
	HighestFence uint64
	Floor        uint64
	NextFence    uint64 // the next grant's fence
	// The holder ("" when free), its lease, fence and class; since when
	// (its first grant: renewals keep it), for how long, and how long its
	// lease has left.
	Holder, Lease, HolderClass string
	HolderFence                uint64
	HeldSince                  time.Time
	HeldForMs, LeaseLeftMs     int64
	FreeInMs                   int64 // lock-delay left before the next grant
	// HolderSet, when the holder holds the resource as a member of a lock
	// set, is the whole set (sorted); nil for a plain lease.
	HolderSet    []string
	Waiters      int
	WaiterOwners []string // the first ones, head first
	// WaiterSets runs beside WaiterOwners: a waiting lock set's whole set
	// (it waits for every member at once), nil for a plain waiter.
	WaiterSets [][]string
	// LongestWaiter has queued longest, since WaitingSince, for
	// LongestWaitMs ("" when nobody waits, or none says since when).
	LongestWaiter string
	WaitingSince  time.Time
	LongestWaitMs int64
	// What is stuck (stuck.go): the longest waiter over the wait
	// threshold whose class is not exempt ("" none) and for how long, and
	// whether the hold is over the hold threshold.
	StuckWaiter string
	StuckWaitMs int64
	StuckHold   bool
	Err         string // the read failed
	Gates       []GateCell
	// CanBreak: the one looking may break this lock (an admin, or the
	// resource policy's break verb). Set per viewer.
	CanBreak bool
	// Permits, for a counting semaphore, is its N: the row has no holder
	// of its own, its waiters are the queue across the slots, and Slots
	// are the slots' own rows in slot order (Resource NAME/_slot.i, each
	// with its holder, fence, lease left and gates), SlotsHeld of them
	// held. 0 and no Slots for an exclusive lock.
	Permits   uint64
	Slots     []ResourceRow
	SlotsHeld int
	// A read/write lock (issue 46). Readers, while readers hold it (no
	// Holder then), are each reader's lease as a row of its own (Resource
	// NAME/_read; Holder, Lease, HolderFence — the last writer's —,
	// since, held for, lease left, and StuckHold by the hold threshold),
	// in the record's order. ReadWrite: readers hold it or a reader waits,
	// and WaiterReads, beside WaiterOwners, says which waiters read.
	// WriterQueued: readers hold it and a writer waits, so a new reader
	// queues behind that writer (writer preference). ReadersFromMs, after
	// a downgrade, is how long before other readers are admitted.
	Readers       []ResourceRow
	ReadWrite     bool
	WaiterReads   []bool
	WriterQueued  bool
	ReadersFromMs int64
}

// rowOf is the row a resource is shown in: a semaphore's slot in its
// semaphore's, a read/write lock's reader resource (NAME/_read) in its
// lock's, any other resource in its own.
func rowOf(resource string) string {
	if name, _, ok := wire.SlotOf(resource); ok {
		return name
	}
	return wire.RecordName(resource)
}

// GateCell is one gate's view of a resource.
type GateCell struct {
	Gate         string
	HighestFence uint64
	Mode         string
	Paused       bool
	Reason       string
}

// waitersShownMax is how many waiter identities a row names.
const waitersShownMax = 3

// readRows reads each resource's lock (linearizable, at most
// readsParallelMax at a time) and judges it by the stuck rules.
func (d *Dashboard) readRows(ctx context.Context, names []string) []ResourceRow {
	rows := make([]ResourceRow, len(names))
	sem := make(chan struct{}, readsParallelMax)
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			ls, err := d.cfg.Registry.LockStatus(ctx, name)
			if err != nil {
				rows[i] = ResourceRow{Resource: name, NextFence: 1, Err: err.Error()}
				return
			}
			rows[i] = d.rules.row(ls)
		}()
	}
	wg.Wait()
	return rows
}
