// Package objreport is gate/report's Source and Resumer for gate/objgate
// (a storereport.Source). Every listing and read of an object store is a
// request, paid for and slow, so it reads:
//
//   - names a page at a time, ListObjectsV2 with a delimiter
//     (objgate.ResourceNames);
//   - each state it needs with one GET of the manifest (objgate.State);
//   - never every record: per resource and kind (alarm, quarantine,
//     action) it remembers the last record key it listed, how many it
//     has counted and the last rows; it lists only the keys after that,
//     keys only (RecordPagesMax pages of objgate.ListPageMax at a time),
//     and GETs only the newest of them it shows (RecordsPerResourceMax,
//     one for actions). It does so for a resource shown when its state
//     changed since, and at least every RecordsRefreshMs otherwise: a
//     record is written just after the manifest commit that asks for it,
//     and a quarantine changes no state.
//
// So one report makes at most two LIST calls for names, one manifest GET
// per resource paused, recent, first or scanned (storereport), and, for
// each resource shown whose records are due, 3×RecordPagesMax LIST calls
// and 7 GETs (none once nothing new was written). What it remembers is
// bounded by KeptMax resources; a resource forgotten is counted again
// from its first record key. A resource with more records of a kind than
// one refresh lists shows the count so far, and its last rows once the
// count has caught up.
package objreport

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/internal/stored"
	"github.com/fencegate/fencegate/gate/objgate"
	"github.com/fencegate/fencegate/gate/report"
	"github.com/fencegate/fencegate/gate/report/storereport"
)

// Bounds.
const (
	// RecordsRefreshMs is the longest a shown resource's records go
	// unlisted while its state stays the same, 60 s.
	RecordsRefreshMs = 60_000
	// RecordPagesMax bounds the LIST calls for one kind of one resource's
	// records in one refresh, 4 (4000 keys).
	RecordPagesMax = 4
	// KeptMax bounds the resources whose record counts are remembered,
	// 256; past it the least recently shown is forgotten.
	KeptMax = 4 * report.ResourcesPerReportMax
)

// kinds are the record kinds a report shows, in kept.kinds's order.
var kinds = [...]string{stored.RecordAlarm, stored.RecordQuarantine, stored.RecordAction}

// New returns the Source and Resumer of g; clk (nil: the system clock)
// times the records' refresh.
func New(g *objgate.Gate, clk clock.Clock) *storereport.Source {
	if clk == nil {
		clk = clock.System{}
	}
	return storereport.New(&store{g: g, clk: clk, kept: map[string]*kept{}})
}

// store is storereport.Store on an objgate.Gate.
type store struct {
	g   *objgate.Gate
	clk clock.Clock

	mu   sync.Mutex // guards kept and used, not the kept values (one report reads each resource once)
	kept map[string]*kept
	used uint64
}

// kept is what is remembered of one resource's records.
type kept struct {
	st     gate.FenceState // at the last refresh
	readAt time.Time       // zero: never read
	kinds  [len(kinds)]kindRecords
	used   uint64 // for the least-recently-shown eviction
}

// kindRecords is one kind of one resource's records, as far as listed.
type kindRecords struct {
	after  string           // the last key listed
	count  int              // keys listed
	behind bool             // keys remain after after
	keys   []string         // the last keys listed, oldest first
	read   []string         // the keys of last
	last   []objgate.Record // the records of read, oldest first
}

func (s *store) Names(ctx context.Context, cursor string, limit int) ([]string, string, error) {
	return s.g.ResourceNames(ctx, cursor, limit)
}

func (s *store) State(ctx context.Context, resource string) (gate.FenceState, error) {
	return s.g.State(ctx, resource)
}

func (s *store) Resume(ctx context.Context, resource string, floor uint64, operator, note string) error {
	return s.g.Resume(ctx, resource, floor, operator, note)
}

// Records implements storereport.Store.
func (s *store) Records(ctx context.Context, resource string, st gate.FenceState) (storereport.Records, error) {
	k := s.take(resource)
	now := s.clk.Now()
	due := k.readAt.IsZero() || !sameState(k.st, st) || now.Sub(k.readAt) >= RecordsRefreshMs*time.Millisecond
	for i := range kinds {
		due = due || k.kinds[i].behind
	}
	if due {
		for i, kind := range kinds {
			n := report.RecordsPerResourceMax
			if kind == stored.RecordAction {
				n = 1
			}
			if err := s.refresh(ctx, resource, kind, n, &k.kinds[i]); err != nil {
				return storereport.Records{}, err
			}
		}
		k.st, k.readAt = st, now
	}
	out := storereport.Records{Alarms: k.kinds[0].count, Quarantined: k.kinds[1].count,
		Recent: storereport.Recent(k.kinds[0].last, k.kinds[1].last)}
	if acts := k.kinds[2].last; len(acts) > 0 {
		out.LastAction = storereport.ActionView(acts[len(acts)-1])
	}
	return out, nil
}

// take returns resource's kept records, remembering a new one (and
// forgetting the least recently shown past KeptMax).
func (s *store) take(resource string) *kept {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.used++
	k := s.kept[resource]
	if k == nil {
		if len(s.kept) >= KeptMax {
			var oldest string
			for name, o := range s.kept {
				if oldest == "" || o.used < s.kept[oldest].used {
					oldest = name
				}
			}
			delete(s.kept, oldest)
		}
		k = &kept{}
		s.kept[resource] = k
	}
	k.used = s.used
	return k
}

// refresh lists kind's keys after the last listed (RecordPagesMax pages
// at most) and, once it has listed them all, reads the newest n it has
// not read.
func (s *store) refresh(ctx context.Context, resource, kind string, n int, kr *kindRecords) error {
	for page := 0; page < RecordPagesMax; page++ {
		keys, more, err := s.g.RecordKeys(ctx, kind, resource, kr.after, objgate.ListPageMax)
		if err != nil {
			return err
		}
		kr.count += len(keys)
		if len(keys) > 0 {
			kr.after = keys[len(keys)-1]
		}
		kr.keys = append(kr.keys, keys...)
		kr.keys = kr.keys[max(0, len(kr.keys)-n):]
		if kr.behind = more; !more {
			break
		}
	}
	if kr.behind || slices.Equal(kr.keys, kr.read) {
		return nil // the newest are still ahead, or already read
	}
	last := make([]objgate.Record, 0, len(kr.keys))
	for _, key := range kr.keys {
		if i := slices.Index(kr.read, key); i >= 0 {
			last = append(last, kr.last[i])
			continue
		}
		r, err := s.g.RecordAt(ctx, key)
		if err != nil {
			return err
		}
		last = append(last, r)
	}
	kr.read, kr.last = slices.Clone(kr.keys), last
	return nil
}

// sameState reports whether a and b are the same as a report shows them.
func sameState(a, b gate.FenceState) bool {
	return a.HighestFence == b.HighestFence && a.LastSegmentSeq == b.LastSegmentSeq && a.Paused == b.Paused &&
		a.PausedReason == b.PausedReason && a.Floor == b.Floor && a.Mode == b.Mode && a.MinPolicyGeneration == b.MinPolicyGeneration
}
