// Package storereport is gate/report's Source and Resumer for a gate
// whose state lives in a store that can be listed but not queried — an
// object store (objreport, for gate/objgate) or Redis (redisreport, for
// gate/redisgate) — with reads bounded whatever the number of resources
// and records, where sqlreport has set-based queries.
//
// Per report it reads, at most:
//
//   - one page of the first names in the store's listing order (the
//     report's "others", after the paused and the recently written);
//   - one page of ScanPerReport names of a scan that walks every name
//     over successive reports: it counts the resources (the total is
//     the count of the last complete walk) and finds the paused ones that
//     no recent decision named (after a restart of the gate, or written
//     through another gate);
//   - the state of each of those, and of the paused and recent ones,
//     ReadsParallelMax at a time;
//   - for each resource shown, its alarm and quarantine counts and last
//     rows and its last operator action, as the Store reads them
//     (bounded by each Store; see objreport and redisreport).
//
// A paused resource is shown from the report after a read of its state
// finds it paused — its own decision's, through the decision log, or the
// scan's — up to the report that finds it resumed; at most PausedKeptMax
// are kept.
package storereport

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/internal/stored"
	"github.com/fencegate/fencegate/gate/report"
)

// Bounds of one report's reads.
const (
	// ScanPerReport is how many names one report's scan reads the state
	// of, beyond those it shows: with the default 2 s interval, a walk
	// over 10,000 resources takes about 10 minutes.
	ScanPerReport = 32
	// ReadsParallelMax bounds the concurrent reads of one report.
	ReadsParallelMax = 8
	// PausedKeptMax bounds the paused resources remembered between
	// reports, ResourcesPerReportMax: more could not be shown anyway.
	PausedKeptMax = report.ResourcesPerReportMax
)

// Store is one adapter's bounded reads.
type Store interface {
	// Names returns up to limit resource names after cursor ("" from the
	// first), in the store's listing order, and the cursor of the next
	// page ("" after the last): a bounded number of store calls.
	Names(ctx context.Context, cursor string, limit int) (names []string, next string, err error)
	// State reads one resource's gate state (a zero state for a resource
	// the gate never stored).
	State(ctx context.Context, resource string) (gate.FenceState, error)
	// Records reads resource's alarm and quarantine counts, its last rows
	// and its last operator action, with a bounded number of store calls;
	// st is the state just read (a Store may keep what it read, and read
	// again when st changed).
	Records(ctx context.Context, resource string, st gate.FenceState) (Records, error)
	// Resume applies the gate's recorded resume (report.Resumer).
	Resume(ctx context.Context, resource string, floor uint64, operator, note string) error
}

// Records is what a report shows of a resource's records.
type Records struct {
	Alarms, Quarantined int
	Recent              []report.RecordView // the last alarm and quarantine rows, oldest first
	LastAction          *report.ActionView
}

// Source reads a report through a Store; create it with New. Safe for
// concurrent use.
type Source struct {
	store Store

	mu        sync.Mutex
	paused    map[string]bool
	cursor    string // the scan's
	passCount int    // names the current walk has counted
	total     int    // names the last complete walk counted
}

var (
	_ report.Source  = (*Source)(nil)
	_ report.Resumer = (*Source)(nil)
)

// New returns a Source over store.
func New(store Store) *Source { return &Source{store: store, paused: map[string]bool{}} }

// Resume implements report.Resumer.
func (s *Source) Resume(ctx context.Context, resource string, floor uint64, operator, note string) error {
	return s.store.Resume(ctx, resource, floor, operator, note)
}

// Resources implements report.Source.
func (s *Source) Resources(ctx context.Context, recent []string, limit int) ([]report.ResourceView, int, error) {
	limit = max(limit, 0)
	first, next, err := s.store.Names(ctx, "", limit)
	if err != nil {
		return nil, 0, err
	}
	scanned, err := s.scan(ctx)
	if err != nil {
		return nil, 0, err
	}
	s.mu.Lock()
	known := sortedKeys(s.paused)
	s.mu.Unlock()
	states, err := s.states(ctx, union(known, recent, first, scanned))
	if err != nil {
		return nil, 0, err
	}
	s.notePaused(states)
	s.mu.Lock()
	shown := union(sortedKeys(s.paused), known, recent, first) // known: shown once more if resumed, with its resume
	s.mu.Unlock()
	views := make([]report.ResourceView, 0, len(shown))
	for _, name := range shown {
		views = append(views, report.ViewOf(name, states[name]))
	}
	views = report.Order(views, recent, limit)
	if err := s.records(ctx, views, states); err != nil {
		return nil, 0, err
	}
	return views, s.totalOf(len(first), next != ""), nil
}

// scan reads the next page of the walk and counts it.
func (s *Source) scan(ctx context.Context) ([]string, error) {
	s.mu.Lock()
	cursor := s.cursor
	s.mu.Unlock()
	names, next, err := s.store.Names(ctx, cursor, ScanPerReport)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.passCount += len(names)
	if s.cursor = next; next == "" { // walked to the end: start over
		s.total, s.passCount = s.passCount, 0
	}
	return names, nil
}

// totalOf is how many resources the gate has: exact when the first page
// held them all, else what the walks counted.
func (s *Source) totalOf(first int, truncated bool) int {
	if !truncated {
		return first
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return max(s.total, s.passCount, first)
}

// states reads names' states, ReadsParallelMax at a time.
func (s *Source) states(ctx context.Context, names []string) (map[string]gate.FenceState, error) {
	out := make([]gate.FenceState, len(names))
	err := parallel(len(names), func(i int) (err error) {
		out[i], err = s.store.State(ctx, names[i])
		return err
	})
	m := make(map[string]gate.FenceState, len(names))
	for i, n := range names {
		m[n] = out[i]
	}
	return m, err
}

// notePaused remembers the paused among states and forgets the resumed.
func (s *Source) notePaused(states map[string]gate.FenceState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, name := range sortedKeys(states) {
		switch st := states[name]; {
		case !st.Paused:
			delete(s.paused, name)
		case s.paused[name] || len(s.paused) < PausedKeptMax:
			s.paused[name] = true
		}
	}
}

// records fills the views' counts, rows and last actions.
func (s *Source) records(ctx context.Context, views []report.ResourceView, states map[string]gate.FenceState) error {
	return parallel(len(views), func(i int) error {
		v := &views[i]
		r, err := s.store.Records(ctx, v.Resource, states[v.Resource])
		if err != nil {
			return err
		}
		v.Alarms, v.Quarantined, v.Recent, v.LastAction = r.Alarms, r.Quarantined, r.Recent, r.LastAction
		return nil
	})
}

// RecordView is an alarm or quarantine row as a report shows it.
func RecordView(r stored.Record) report.RecordView {
	kind := r.AlarmKind
	if r.Kind == stored.RecordQuarantine {
		kind = string(gate.Quarantined)
	}
	return report.RecordView{Kind: report.Cut(kind), Fence: r.FenceToken, Detail: report.Cut(r.Detail), AtMs: r.AtMs}
}

// ActionView is an operator action row as a report shows it.
func ActionView(r stored.Record) *report.ActionView {
	return &report.ActionView{Action: report.Cut(r.Outcome), Operator: report.Cut(r.Operator), Detail: report.Cut(r.Detail), AtMs: r.AtMs}
}

// Recent merges the last alarm and quarantine rows, oldest first, and
// keeps the last RecordsPerResourceMax.
func Recent(alarms, quarantine []stored.Record) []report.RecordView {
	all := append(slices.Clone(alarms), quarantine...)
	slices.SortStableFunc(all, func(a, b stored.Record) int { return cmp.Compare(a.AtMs, b.AtMs) })
	var out []report.RecordView
	for _, r := range all[max(0, len(all)-report.RecordsPerResourceMax):] {
		out = append(out, RecordView(r))
	}
	return out
}

// union returns the names of lists in order, each once.
func union(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		for _, n := range l {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// parallel runs f(0..n-1), ReadsParallelMax at a time, and returns the
// first error.
func parallel(n int, f func(i int) error) error {
	sem := make(chan struct{}, ReadsParallelMax)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = f(i)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return fmt.Errorf("storereport: %w", err)
		}
	}
	return nil
}
