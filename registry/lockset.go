package registry

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/wire"
)

// A lock set (wire.LockSetRequest) is decided on every member's record at
// once (lockstate's lockset.go) and committed in one store transaction
// over every member (Store, "Lock sets"): ReadSet reads them all at one
// revision, a set Write compares each member it writes and writes it, all
// or nothing. As for one record (casLoop), a decision may stand on the
// records this Registry last saw when it has every member cached (a
// set's first acquire step, a renewal): a decision that writes is safe on
// them, since every member it depends on is compared (a grant, joining
// every queue and a renewal write every member; a stamp is right whatever
// the members it leaves hold), so a stale cache costs a failed compare
// and a fresh read; a decision that writes nothing or fails is made again
// on a fresh ReadSet before it is answered. A waiting set's later steps,
// a release and a withdrawal read.

// setCasLoop reads every member and the entries keys (one linearizable
// ReadSet; with cached, the cache when it holds every member), decides
// and compare-and-swaps until a write commits or the decision needs
// none, as casLoop does for one record. It returns the snapshot decided
// on and, when a write committed, its revision.
func (r *Registry) setCasLoop(ctx context.Context, members []string, keys []lockstate.RequestKey, cached bool, decide decideFunc) (Snapshot, uint64, error) {
	for _, m := range members {
		if err := r.awaitRelease(ctx, m); err != nil {
			return Snapshot{}, 0, storeError("read", err)
		}
	}
	s, fresh := Snapshot{}, false
	if cached {
		s, cached = r.cachedSet(members, keys)
	}
	readSet := func() error {
		var err error
		if s, err = r.store.ReadSet(ctx, members, keys); err != nil {
			return storeError("read set", err)
		}
		fresh = true
		r.rememberMembers(&s)
		return nil
	}
	if !cached {
		if err := readSet(); err != nil {
			return s, 0, err
		}
	}
	for conflicts := 0; ; {
		if err := sameMembers(&s, members); err != nil {
			return s, 0, err
		}
		now := r.now()
		w, err := decide(&s, now)
		if w == nil || err != nil {
			if fresh {
				return s, 0, err
			}
			if err := readSet(); err != nil { // an answer stands on a fresh read only
				return s, 0, err
			}
			continue
		}
		if conflicts >= r.cfg.CASRetriesMax {
			return s, 0, fmt.Errorf("%w: lock set %v: %d compare-and-swap retries", wire.ErrConflict, members, conflicts)
		}
		w.ReadKeys = readKeys(keys, w)
		if w.SettingsRev != 0 && w.SettingsRev == s.SettingsRev {
			w.SettingsWas = &s.Settings
		}
		res, err := r.store.Commit(ctx, *w)
		if err != nil {
			return s, 0, storeError("commit", err)
		}
		if res.OK {
			r.rememberSetWrite(&s, w, res.Revision, now)
			return s, res.Revision, nil
		}
		conflicts++
		if len(res.Current.Members) == len(members) {
			s, fresh = res.Current, true
			r.rememberMembers(&s)
		} else if err := readSet(); err != nil {
			// The write named only the members it wrote, so its Current
			// holds only those: read the whole set again.
			return s, 0, err
		}
		if err := r.backoff(ctx, conflicts); err != nil {
			return s, 0, err
		}
	}
}

// cachedSet builds a set snapshot from the cache, every member's record
// as last seen and every request entry assumed absent (a wrong guess
// fails the entry's compare); ok is false unless every member and the
// settings are cached.
func (r *Registry) cachedSet(members []string, keys []lockstate.RequestKey) (Snapshot, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.sets.known {
		return Snapshot{}, false
	}
	s := Snapshot{Revision: r.sets.rev, Settings: r.sets.settings, SettingsRev: r.sets.rev}
	for _, m := range members {
		c, ok := r.cache[m]
		if !ok {
			return Snapshot{}, false
		}
		s.Members = append(s.Members, MemberSlot{Resource: m, Record: c.record, RecordRev: c.rev, RecordRaw: c.raw})
		s.Revision = max(s.Revision, c.rev)
	}
	for _, k := range keys {
		s.Requests = append(s.Requests, RequestSlot{Key: k})
	}
	return s, true
}

// sameMembers checks a set snapshot holds members, in order, as every
// set decision assumes: a store that answered otherwise broke its
// contract, and nothing is decided on it.
func sameMembers(s *Snapshot, members []string) error {
	ok := len(s.Members) == len(members)
	for i := 0; ok && i < len(members); i++ {
		ok = s.Members[i].Resource == members[i]
	}
	if !ok {
		return fmt.Errorf("%w: read set: the store answered %d members for %v", wire.ErrUnavailable, len(s.Members), members)
	}
	return nil
}

// rememberMembers caches every member record and the settings of a set
// snapshot.
func (r *Registry) rememberMembers(s *Snapshot) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range s.Members {
		if c, ok := r.cache[m.Resource]; ok && c.rev > s.Revision {
			delete(r.cache, m.Resource) // ahead of the store (see dropAheadOfStoreLocked)
		}
		r.putRecordLocked(m.Resource, m.Record, m.RecordRaw, m.RecordRev)
	}
	r.putSettingsLocked(s.Settings, s.SettingsRev)
}

// rememberSetWrite caches what a committed set write wrote and reports
// it to the observer, member by member.
func (r *Registry) rememberSetWrite(s *Snapshot, w *Write, rev uint64, now int64) {
	r.mu.Lock()
	for _, m := range w.Members {
		if m.Record != nil {
			r.putRecordLocked(m.Resource, m.Record, nil, rev)
		}
	}
	r.mu.Unlock()
	for _, m := range w.Members { // the members written, each against its record decided on
		for _, was := range s.Members {
			if was.Resource == m.Resource && m.Record != nil {
				r.observe(&Snapshot{Record: was.Record}, &Write{Resource: m.Resource, Record: m.Record}, now)
			}
		}
	}
}

// memberRecords are the member records of a set snapshot, in member
// order (nil when absent).
func memberRecords(s *Snapshot) []*lockstate.Record {
	out := make([]*lockstate.Record, len(s.Members))
	for i, m := range s.Members {
		out[i] = m.Record
	}
	return out
}

// memberView is member i of a set snapshot as a one-resource snapshot
// (its record, the settings and the entries read), for the answers that
// take one.
func memberView(s *Snapshot, i int) *Snapshot {
	m := s.Members[i]
	return &Snapshot{
		Revision: s.Revision, Resource: m.Resource, Record: m.Record, RecordRev: m.RecordRev, RecordRaw: m.RecordRaw,
		Settings: s.Settings, SettingsRev: s.SettingsRev, Requests: s.Requests,
	}
}

// setWriteFor builds the set write of a decision made on s: each member
// with a new record compared as s saw it (contents where it existed) and
// written, the settings compared, each new entry compared absent and put
// in the sweep index (as writeFor does for one record). Nil when the
// decision writes nothing. A member the decision leaves as it is is not
// compared: every decision that depends on all members at once (a grant,
// joining every queue, a renewal) writes every member, and the others (a
// waiting set stamping itself on some members, withdrawing its tickets,
// releasing) are right whatever the members they do not write hold; a
// compare there would only fail on unrelated writes.
func (r *Registry) setWriteFor(s *Snapshot, recs []*lockstate.Record, entries []lockstate.EntryPut) *Write {
	writes := len(entries) > 0
	for _, rec := range recs {
		writes = writes || rec != nil
	}
	if !writes {
		return nil
	}
	w := &Write{SettingsRev: s.SettingsRev}
	for i, m := range s.Members {
		if i >= len(recs) || recs[i] == nil {
			continue
		}
		mw := MemberWrite{Resource: m.Resource, RecordRev: m.RecordRev, Record: recs[i]}
		if m.RecordRev != 0 && m.Record != nil {
			mw.RecordWas, mw.RecordWasRaw = m.Record, m.RecordRaw
		}
		w.Members = append(w.Members, mw)
	}
	for _, p := range entries {
		e := p.Entry
		w.Requests = append(w.Requests, RequestWrite{Key: p.Key, Entry: &e, Compare: true, ModRev: s.slot(p.Key).ModRev})
		w.Sweeps = append(w.Sweeps, SweepWrite{Item: SweepItem{AtMs: lockstate.FirstSweepMs(e.Grant, r.lim), Key: p.Key, Resource: wire.RecordName(e.Grant.Resource)}})
	}
	return w
}

// AcquireSet grants owner every member of req.Members at once, each an
// ordinary grant on its own resource with its own fence, or none
// (wire.LockSetRequest; lockstate's lockset.go has the rules). A retry of
// the same request ID answers from the members' entries. With WaitMs > 0
// a set that cannot have every member joins every member's queue in one
// write and holds nothing while it waits, woken by watches on every
// member (and bounded polling on the registry clock); if ctx ends its
// tickets are withdrawn. The answer lists the members in req's (sorted)
// order.
func (r *Registry) AcquireSet(ctx context.Context, owner string, req wire.LockSetRequest) (wire.IssuedSet, error) {
	a, err := r.StartAcquireSet(owner, req)
	if err != nil {
		return wire.IssuedSet{}, err
	}
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	var wake <-chan struct{}
	for !a.Step(ctx) {
		if wake == nil {
			wake = r.watchRecords(wctx, a.in.Req.Members, a.from)
		}
		timer := r.clock.After(a.WakeAt().Sub(r.clock.Now()))
		select {
		case <-ctx.Done():
			a.Abandon(ctx)
			return wire.IssuedSet{}, fmt.Errorf("registry: acquire lock set %v: waiting: %w", a.in.Req.Members, ctx.Err())
		case <-wake:
		case <-timer:
		}
	}
	return a.Result()
}

// SetAcquisition is one lock-set acquire in progress, stepped one
// decision (lockstate.DecideSetAcquire) at a time, as Acquisition is for
// one resource: AcquireSet drives it with watches and timers, a
// simulator may drive it with its own events. Each Step reads every
// member, decides once and commits (granting every member, joining or
// keeping every queue) without sleeping. Not safe for concurrent use.
type SetAcquisition struct {
	r      *Registry
	in     lockstate.SetInput
	queued bool
	done   bool
	issued wire.IssuedSet
	err    error
	wakeMs int64
	from   uint64
}

// StartAcquireSet validates a lock-set acquire and fixes its wait's
// deadline by the registry clock (lockstate.NewSetInput). It touches no
// store.
func (r *Registry) StartAcquireSet(owner string, req wire.LockSetRequest) (*SetAcquisition, error) {
	in, err := lockstate.NewSetInput(owner, req, r.now(), r.lim)
	if err != nil {
		return nil, err
	}
	return &SetAcquisition{r: r, in: in}, nil
}

// Step makes the set's next decision. It reports whether the acquire has
// its answer (Result); if not, the set waits in every member's queue:
// call Step again when a member's record changes or at WakeAt. An error
// while queued withdraws every ticket.
func (a *SetAcquisition) Step(ctx context.Context) bool {
	if a.done {
		return true
	}
	r, in := a.r, a.in
	for range acquireStepsMax {
		dec, s, rev, now, err := r.setAcquireStep(ctx, in, a.queued)
		if errors.Is(err, wire.ErrConflict) && (a.queued || in.Wait) && ctx.Err() == nil {
			// Contention: keep our place, or, before the set has one, look
			// again — a failed compare wrote nothing, and a set is compared
			// on every member, so contention that answers one record's
			// acquire answers a set's only after many more tries. Its wait
			// still ends at its deadline (the decision says WAIT_TIMEOUT).
			continue
		}
		if err != nil {
			if (a.queued || in.Wait && ctx.Err() != nil) && !errors.Is(err, wire.ErrWaitTimeout) {
				r.cancelSet(ctx, in)
			}
			return a.finish(wire.IssuedSet{}, err)
		}
		switch dec.Outcome {
		case lockstate.AcquirePurge, lockstate.AcquireHanded:
			continue
		case lockstate.AcquireGranted:
			is, err := r.issueSet(dec.Bodies, rev, now, s.Settings, in)
			return a.finish(a.sinceArrival(now, is, err))
		case lockstate.AcquireExisting:
			is, err := r.existingSet(&s, in, now)
			return a.finish(a.sinceArrival(now, is, err))
		}
		a.queued = true
		a.from = max(rev, s.Revision) + 1
		a.wakeMs = r.setWake(in, &s, dec, now)
		return false
	}
	if a.queued {
		r.cancelSet(ctx, in)
	}
	return a.finish(wire.IssuedSet{}, fmt.Errorf("%w: lock set %v: %d decisions in a row without an answer", wire.ErrConflict, in.Req.Members, acquireStepsMax))
}

// sinceArrival counts each HELD member's ExpiresAfterMs from the
// acquire's arrival, as Acquisition.sinceArrival does: the wait is inside
// the TTL. now is the instant the answer was made at.
func (a *SetAcquisition) sinceArrival(now int64, is wire.IssuedSet, err error) (wire.IssuedSet, error) {
	if err == nil {
		for i := range is.Members {
			fromArrival(&is.Members[i], now-a.in.ArrivedMs)
		}
	}
	return is, err
}

func (a *SetAcquisition) finish(is wire.IssuedSet, err error) bool {
	a.done, a.issued, a.err = true, is, err
	return true
}

// Result is the acquire's answer once Step reported it.
func (a *SetAcquisition) Result() (wire.IssuedSet, error) { return a.issued, a.err }

// Queued reports whether the set holds tickets in its members' queues.
func (a *SetAcquisition) Queued() bool { return a.queued && !a.done }

// WakeAt is the registry-clock instant at which a waiting set should
// step again even if nothing was written: a member's holder expiring,
// lock-delay ending, a claim window closing, the next stamp that keeps
// its ticket seen, its deadline; at most WaitPollMsMax after the last
// step.
func (a *SetAcquisition) WakeAt() time.Time { return fromMs(a.wakeMs) }

// WatchFrom is the store revision from which a write to a member's record
// is news to a waiting set.
func (a *SetAcquisition) WatchFrom() uint64 { return a.from }

// Members are the set's members, sorted.
func (a *SetAcquisition) Members() []string { return a.in.Req.Members }

// Abandon withdraws a waiting set's tickets because its caller gave up
// (best effort: tickets left behind lapse at their deadline, or are
// dropped once stale).
func (a *SetAcquisition) Abandon(ctx context.Context) {
	if a.queued && !a.done {
		a.r.cancelSet(ctx, a.in)
		a.done, a.err = true, fmt.Errorf("registry: acquire lock set %v: abandoned", a.in.Req.Members)
	}
}

// setAcquireStep runs one lock-set decision to its commit.
func (r *Registry) setAcquireStep(ctx context.Context, in lockstate.SetInput, queued bool) (lockstate.SetDecision, Snapshot, uint64, int64, error) {
	var (
		dec lockstate.SetDecision
		at  int64
	)
	keys := in.Keys()
	s, rev, err := r.setCasLoop(ctx, in.Req.Members, keys, !queued, func(s *Snapshot, now int64) (*Write, error) {
		at = now
		own := make([]*lockstate.RequestEntry, len(keys))
		for i, k := range keys {
			own[i] = s.slot(k).Entry
		}
		var err error
		if dec, err = lockstate.DecideSetAcquire(memberRecords(s), own, s.Settings, in, now, r.lim); err != nil {
			return nil, err
		}
		if dec.Outcome == lockstate.AcquirePurge {
			// Every member's entry that exists is past retention (or its
			// set's was swept): delete them all, then decide again.
			w := &Write{SettingsRev: s.SettingsRev}
			for _, k := range keys {
				if sl := s.slot(k); sl.Entry != nil {
					w.Requests = append(w.Requests, RequestWrite{Key: k, Compare: true, ModRev: sl.ModRev})
				}
			}
			return w, nil
		}
		w := r.setWriteFor(s, dec.Records, dec.Entries)
		if dec.Outcome == lockstate.AcquireQueued && w != nil {
			// As for one resource: a request that has an answer never
			// queues (its members' entries must still be absent).
			for _, k := range keys {
				if !writes(w, k) {
					w.Requests = append(w.Requests, RequestWrite{Key: k, Compare: true, ModRev: s.slot(k).ModRev})
				}
			}
		}
		return w, nil
	})
	return dec, s, rev, at, err
}

// issueSet answers a set just granted: each member's grant, fresh.
func (r *Registry) issueSet(bodies []lockstate.GrantBody, rev uint64, now int64, set lockstate.Settings, in lockstate.SetInput) (wire.IssuedSet, error) {
	out := wire.IssuedSet{Members: make([]wire.Issued, len(bodies))}
	for i, b := range bodies {
		is, err := r.issueFresh(b, rev, now+int64(in.TTLMs), rev, now, set)
		if err != nil {
			return wire.IssuedSet{}, err
		}
		out.Members[i] = is
	}
	return out, nil
}

// existingSet answers a retried set from its members' entries, each with
// its current state.
func (r *Registry) existingSet(s *Snapshot, in lockstate.SetInput, now int64) (wire.IssuedSet, error) {
	out := wire.IssuedSet{Members: make([]wire.Issued, len(in.Req.Members))}
	for i := range in.Req.Members {
		is, err := r.existing(memberView(s, i), in.MemberKey(i), now, false)
		if err != nil {
			return wire.IssuedSet{}, err
		}
		out.Members[i] = is
	}
	return out, nil
}

// setWake is when a waiting set steps again if nothing wakes it first:
// the earliest instant a member's record changes without a write
// (lockstate.ChangesAt), the next stamp where its ticket is a blocked
// head (lockstate.SetStampMs), its deadline; at most WaitPollMsMax away.
func (r *Registry) setWake(in lockstate.SetInput, s *Snapshot, dec lockstate.SetDecision, now int64) int64 {
	wake := min(now+int64(r.cfg.WaitPollMsMax), in.DeadlineMs)
	for i, m := range s.Members {
		rec := m.Record
		if i < len(dec.Records) && dec.Records[i] != nil {
			rec = dec.Records[i]
		}
		if rec == nil {
			continue
		}
		next, _ := lockstate.Normalize(rec, s.Settings, now, r.lim)
		if at, changes := lockstate.ChangesAt(next, now, r.lim); changes {
			wake = min(wake, at)
		}
		if len(next.Waiters) > 0 && next.Holder == nil {
			if w := next.Waiters[0]; w.Owner == in.Owner && w.RequestID == in.MemberKey(i).RequestID {
				wake = min(wake, now+lockstate.SetStampMs(r.lim))
			}
		}
	}
	return max(wake, now+1)
}

// watchRecords merges watches of every named record (a set's members, a
// semaphore and its slots) into one wake-up channel (coalesced). A watch
// that fails or ends only leaves the poll.
func (r *Registry) watchRecords(ctx context.Context, names []string, fromRev uint64) <-chan struct{} {
	wake := make(chan struct{}, 1)
	for _, name := range names {
		events, err := r.store.Watch(ctx, name, fromRev)
		if err != nil {
			continue
		}
		go func() {
			for range events {
				select {
				case wake <- struct{}{}:
				default:
				}
			}
		}()
	}
	return wake
}

// cancelSet withdraws a waiting set's tickets from every member's queue
// in one write, best effort, even though ctx may be over.
func (r *Registry) cancelSet(ctx context.Context, in lockstate.SetInput) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelWaitTimeoutMs*time.Millisecond)
	defer cancel()
	_, _, _ = r.setCasLoop(ctx, in.Req.Members, nil, false, func(s *Snapshot, now int64) (*Write, error) {
		d := lockstate.DecideSetCancel(memberRecords(s), s.Settings, in, now, r.lim)
		return r.setWriteFor(s, d.Records, nil), nil
	})
}

// setLeases validates a set's renewal or release and splits it.
func setLeases(owner string, leases []wire.LeaseRequest) (members, ids []string, err error) {
	if err := grant.ValidateOwner(owner); err != nil {
		return nil, nil, fmt.Errorf("%w: owner: %v", wire.ErrInvalid, err)
	}
	if err := wire.ValidateLockSetLeases(leases); err != nil {
		return nil, nil, err
	}
	for _, l := range leases {
		members, ids = append(members, l.Resource), append(ids, l.Lease)
	}
	return members, ids, nil
}

// RenewSet renews every member's lease of a lock set (leases in member
// order) to now + its TTL, in one write, and answers each with a fresh
// HELD status; or renews none: if any member's lease has ended or is not
// owner's, the error names that member and how it ended (the client then
// ends the whole set).
func (r *Registry) RenewSet(ctx context.Context, owner string, leases []wire.LeaseRequest) (wire.IssuedSet, error) {
	members, ids, err := setLeases(owner, leases)
	if err != nil {
		return wire.IssuedSet{}, err
	}
	var (
		dec lockstate.SetLeaseDecision
		at  int64
	)
	s, rev, err := r.setCasLoop(ctx, members, nil, true, func(s *Snapshot, now int64) (*Write, error) {
		var err error
		at = now
		if dec, err = lockstate.DecideSetRenew(memberRecords(s), members, s.Settings, owner, ids, now, r.lim); err != nil {
			return nil, err
		}
		return r.setWriteFor(s, dec.Records, nil), nil
	})
	if err != nil {
		return wire.IssuedSet{}, err
	}
	out := wire.IssuedSet{Members: make([]wire.Issued, len(members))}
	for i, h := range dec.Holders {
		backendRev, err := r.backendRevision(ctx, owner, h.Grant)
		if err != nil {
			return wire.IssuedSet{}, err
		}
		if out.Members[i], err = r.issue(h.Grant, backendRev, grant.StateHeld, h.ExpiresAtMs, max(rev, s.Revision), at, s.Settings); err != nil {
			return wire.IssuedSet{}, err
		}
	}
	return out, nil
}

// ReleaseSet releases every member's lease of a lock set (leases in
// member order) in one write; each member's queue head is handled as
// after a plain release (a plain head is handed the member in the same
// write, a set's head claims it itself). Releasing again succeeds. A
// member whose lease had already ended otherwise (expired, broken) is
// named in the error, after the others were released.
func (r *Registry) ReleaseSet(ctx context.Context, owner string, leases []wire.LeaseRequest) error {
	members, ids, err := setLeases(owner, leases)
	if err != nil {
		return err
	}
	var failed error
	// Read, not cached: a release writes only the members it releases, and
	// one the cache shows released already must be so in the store.
	_, _, err = r.setCasLoop(ctx, members, nil, false, func(s *Snapshot, now int64) (*Write, error) {
		var dec lockstate.SetLeaseDecision
		dec, failed = lockstate.DecideSetRelease(memberRecords(s), members, s.Settings, owner, ids, now, r.lim, takenKeys(s))
		return r.setWriteFor(s, dec.Records, dec.Entries), nil
	})
	if err != nil {
		return err
	}
	return failed
}
