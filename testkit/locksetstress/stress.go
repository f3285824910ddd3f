// Package locksetstress drives lock sets over overlapping members from
// many goroutines against registries sharing one store, and checks what
// issue 46 promises of them: no deadlock (every wait is served before
// its deadline, every worker finishes), never a partial set held (an
// observer reading every member at one revision never sees a set held in
// part, nor a waiting set holding anything), one holder per member at a
// time, and fences strictly increasing per member in commit order. It
// runs on any Store (the registry's tests use the memory store, etcdstore's
// a real etcd). Its negative control, MultiLock, takes the members one
// plain lock at a time in the order each caller names them, as a
// MultiLock does: callers naming them in opposite orders deadlock until
// their waits run out.
package locksetstress

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/wire"
)

// Sets are the lock sets the workers take, each in the order its caller
// names it (the registry takes them sorted; MultiLock in this order),
// and a plain lock on the shared member beside them.
var Sets = [][]string{{"acct/a", "acct/b"}, {"acct/b", "acct/a"}, {"acct/b", "acct/c"}, {"acct/c", "acct/a", "acct/b"}, {"acct/b"}}

// Resources are every member of Sets, sorted.
var Resources = []string{"acct/a", "acct/b", "acct/c"}

// Options sets a run's shape.
type Options struct {
	Workers  int           // goroutines, spread over the registries
	Duration time.Duration // how long workers start new acquires
	WaitMs   uint64        // each acquire's wait
	HoldMax  time.Duration // a holder holds up to this long
	// MultiLock: the negative control (member by member, in caller order).
	MultiLock bool
}

// Result is what a run saw.
type Result struct {
	SetsGranted, PlainGranted int64
	Unserved                  int64 // waits that ran out (WAIT_TIMEOUT): a deadlock's mark
	// Conflicts are calls answered CONFLICT (too much contention) and
	// retried with the same request, as a client does.
	Conflicts    int64
	Observations int64 // member snapshots the observer checked
	Violations   []string
}

type grantSeen struct {
	resource string
	fence    uint64
	rev      uint64
}

type run struct {
	opt        Options
	regs       []*registry.Registry
	store      registry.Store
	mu         sync.Mutex
	holder     map[string]string // member → the worker's token holding it, by the workers' own account
	grants     []grantSeen
	violations []string
	res        Result
}

func (r *run) violate(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.violations) < 20 {
		r.violations = append(r.violations, fmt.Sprintf(format, args...))
	}
}

// Run drives the workers on regs (replicas over store) and returns what it
// saw; it fails t only for errors of the harness itself.
func Run(t testing.TB, store registry.Store, regs []*registry.Registry, opt Options) Result {
	t.Helper()
	r := &run{opt: opt, regs: regs, store: store, holder: map[string]string{}}
	ctx, cancel := context.WithTimeout(context.Background(), opt.Duration+time.Duration(opt.WaitMs)*time.Millisecond+30*time.Second)
	defer cancel()
	stopObs := make(chan struct{})
	obsDone := make(chan struct{})
	go func() { defer close(obsDone); r.observe(ctx, stopObs) }()
	deadline := time.Now().Add(opt.Duration)
	var wg sync.WaitGroup
	var finished atomic.Int64
	for w := range opt.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer finished.Add(1)
			rng := rand.New(rand.NewPCG(uint64(w), 46))
			reg := regs[w%len(regs)]
			for n := 0; time.Now().Before(deadline); n++ {
				if err := r.cycle(ctx, reg, w, n, rng); err != nil {
					r.violate("worker %d: %v", w, err)
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		r.violate("deadlock: only %d of %d workers finished", finished.Load(), opt.Workers)
	}
	close(stopObs)
	<-obsDone
	r.checkFences()
	r.res.Violations = r.violations
	return r.res
}

// conflictRetriesMax bounds one call's retries after CONFLICT.
const conflictRetriesMax = 50

// retry calls f again, with the same request, while it answers CONFLICT
// (the registry's "too much contention": the outcome is known, nothing
// was done), as a client does.
func (r *run) retry(f func() error) error {
	for range conflictRetriesMax {
		err := f()
		if !errors.Is(err, wire.ErrConflict) {
			return err
		}
		atomic.AddInt64(&r.res.Conflicts, 1)
		time.Sleep(time.Millisecond)
	}
	return fmt.Errorf("%d conflicts in a row", conflictRetriesMax)
}

// cycle is one worker's acquire, hold and release.
func (r *run) cycle(ctx context.Context, reg *registry.Registry, w, n int, rng *rand.Rand) error {
	named := Sets[rng.IntN(len(Sets))]
	owner := fmt.Sprint("w", w)
	id := fmt.Sprintf("w%d-%d", w, n)
	token := id
	var leases []wire.LeaseRequest
	var release func() error // what the cycle gives back; set by each branch
	switch {
	case len(named) == 1 || r.opt.MultiLock:
		var took []wire.Issued
		release = func() error {
			r.drop(token, took)
			for _, is := range took {
				if err := r.retry(func() error { return reg.Release(ctx, owner, is.Grant.Resource, is.Grant.Lease) }); err != nil {
					return fmt.Errorf("release %s: %w", is.Grant.Resource, err)
				}
			}
			return nil
		}
		for i, m := range named {
			var is wire.Issued
			err := r.retry(func() (err error) {
				is, err = reg.Acquire(ctx, owner, wire.AcquireRequest{Resource: m, OperationID: "op", OperationClass: "settle",
					RequestID: fmt.Sprint(id, ".m", i), TTLMs: 30_000, WaitMs: r.opt.WaitMs})
				return err
			})
			if errors.Is(err, wire.ErrWaitTimeout) {
				atomic.AddInt64(&r.res.Unserved, 1)
				return release() // give back what it took (a MultiLock's rollback)
			}
			if err != nil {
				return fmt.Errorf("acquire %s: %w", m, err)
			}
			took = append(took, is)
			r.take(token, []wire.Issued{is})
		}
		atomic.AddInt64(&r.res.PlainGranted, 1)
	default:
		members := slices.Clone(named)
		slices.Sort(members)
		var is wire.IssuedSet
		err := r.retry(func() (err error) {
			is, err = reg.AcquireSet(ctx, owner, wire.LockSetRequest{Members: members, OperationID: "op", OperationClass: "settle",
				RequestID: id, TTLMs: 30_000, WaitMs: r.opt.WaitMs})
			return err
		})
		if errors.Is(err, wire.ErrWaitTimeout) {
			atomic.AddInt64(&r.res.Unserved, 1)
			return nil
		}
		if err != nil {
			return fmt.Errorf("acquire set %v: %w", members, err)
		}
		if len(is.Members) != len(members) {
			return fmt.Errorf("set %v answered with %d grants", members, len(is.Members))
		}
		for i, m := range is.Members {
			if m.Grant.Resource != members[i] || m.Grant.RequestID != wire.MemberRequestID(id, i) {
				return fmt.Errorf("set %v: member %d's grant is for %s (%s)", members, i, m.Grant.Resource, m.Grant.RequestID)
			}
			leases = append(leases, wire.LeaseRequest{Resource: m.Grant.Resource, Lease: m.Grant.Lease})
		}
		r.take(token, is.Members)
		atomic.AddInt64(&r.res.SetsGranted, 1)
		release = func() error {
			r.drop(token, is.Members)
			return r.retry(func() error { return reg.ReleaseSet(ctx, owner, leases) })
		}
		if rng.IntN(4) == 0 {
			if err := r.retry(func() error { _, err := reg.RenewSet(ctx, owner, leases); return err }); err != nil {
				return fmt.Errorf("renew set %v: %w", members, err)
			}
		}
	}
	time.Sleep(time.Duration(rng.Int64N(int64(r.opt.HoldMax) + 1)))
	return release()
}

// take notes that token holds the granted members: each must be free by
// the workers' account (one holder per member), and its fence is kept for
// checkFences.
func (r *run) take(token string, granted []wire.Issued) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, is := range granted {
		m := is.Grant.Resource
		if other, held := r.holder[m]; held {
			r.violations = append(r.violations, fmt.Sprintf("%s granted to %s while %s holds it", m, token, other))
		}
		r.holder[m] = token
		r.grants = append(r.grants, grantSeen{resource: m, fence: is.Grant.FenceToken, rev: is.Grant.BackendRevision})
	}
}

// drop notes, before their release, that token no longer holds members.
func (r *run) drop(token string, granted []wire.Issued) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, is := range granted {
		if r.holder[is.Grant.Resource] == token {
			delete(r.holder, is.Grant.Resource)
		}
	}
}

// observe reads every member at one revision, over and over, and checks
// no lock set is held in part and no waiting set holds anything.
func (r *run) observe(ctx context.Context, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		s, err := r.store.ReadSet(ctx, Resources, nil)
		if err != nil {
			if ctx.Err() == nil {
				r.violate("observer: read set: %v", err)
			}
			return
		}
		atomic.AddInt64(&r.res.Observations, 1)
		r.checkSnapshot(s)
		time.Sleep(time.Millisecond)
	}
}

// setOf names the set a member's request ID belongs to: "owner/id" for
// "set.<i>.<id>", "" for a plain request.
func setOf(owner, requestID string) string {
	rest, ok := strings.CutPrefix(requestID, wire.SetRequestIDPrefix)
	if !ok {
		return ""
	}
	_, id, _ := strings.Cut(rest, ".")
	return owner + "/" + id
}

func (r *run) checkSnapshot(s registry.Snapshot) {
	now := time.Now().UnixMilli()
	held := map[string]map[string]bool{} // set → members it holds live
	want := map[string][]string{}
	for _, m := range s.Members {
		if m.Record == nil || m.Record.Holder == nil {
			continue
		}
		h := m.Record.Holder
		set := setOf(h.Grant.Owner, h.Grant.RequestID)
		if set == "" || now >= h.ExpiresAtMs {
			continue
		}
		if held[set] == nil {
			held[set] = map[string]bool{}
		}
		held[set][m.Resource] = true
		want[set] = h.Members
	}
	for set, got := range held {
		for _, m := range want[set] {
			if !got[m] {
				r.violate("partial hold at revision %d: set %s holds %v of %v", s.Revision, set, keysOf(got), want[set])
			}
		}
	}
	for _, m := range s.Members {
		if m.Record == nil {
			continue
		}
		for _, w := range m.Record.Waiters {
			if set := setOf(w.Owner, w.RequestID); set != "" && len(held[set]) > 0 {
				r.violate("at revision %d set %s waits on %s while it holds %v", s.Revision, set, m.Resource, keysOf(held[set]))
			}
		}
	}
}

func keysOf(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// checkFences: per member, in commit order, every grant's fence is above
// the one before.
func (r *run) checkFences() {
	by := map[string][]grantSeen{}
	for _, g := range r.grants {
		by[g.resource] = append(by[g.resource], g)
	}
	for m, gs := range by {
		slices.SortFunc(gs, func(a, b grantSeen) int { return cmp.Compare(a.rev, b.rev) })
		for i := 1; i < len(gs); i++ {
			if gs[i].fence <= gs[i-1].fence {
				r.violations = append(r.violations, fmt.Sprintf("%s: fence %d at revision %d not above %d at revision %d", m, gs[i].fence, gs[i].rev, gs[i-1].fence, gs[i-1].rev))
			}
		}
	}
}
