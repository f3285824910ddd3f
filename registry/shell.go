package registry

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/wire"
)

// decideFunc is one pure decision over a snapshot at now; it returns the
// write to commit, or nil when the answer needs none.
type decideFunc func(s *Snapshot, now int64) (*Write, error)

// casLoop reads (or, when cached, takes the last record seen), decides and
// compare-and-swaps until a write commits or the decision needs none. A
// decision that writes nothing or fails is only returned when it was made on
// a fresh, linearizable snapshot: a stale cache may cost a failed compare,
// never a wrong answer. It returns the snapshot decided on and, when a
// write committed, its revision (0 otherwise).
func (r *Registry) casLoop(ctx context.Context, resource string, keys []lockstate.RequestKey, cached bool, decide decideFunc) (Snapshot, uint64, error) {
	return r.casLoopMode(ctx, resource, keys, cached, false, decide)
}

// casLoopMode is casLoop; with staleOK a decision that writes nothing may
// stand on the cache (a waiter that stays queued needs no fresh read: the
// next event or poll brings one).
func (r *Registry) casLoopMode(ctx context.Context, resource string, keys []lockstate.RequestKey, cached, staleOK bool, decide decideFunc) (Snapshot, uint64, error) {
	s, fresh := Snapshot{}, false
	if cached {
		s, cached = r.cachedSnapshot(resource, keys)
	}
	if !cached {
		var err error
		if s, err = r.read(ctx, resource, keys); err != nil {
			return s, 0, err
		}
		fresh = true
	}
	var unlock func()
	defer func() {
		if unlock != nil {
			unlock()
		}
	}()
	for conflicts := 0; ; {
		now := r.now()
		w, err := decide(&s, now)
		if w == nil || err != nil {
			if fresh || staleOK && err == nil {
				return s, 0, err
			}
			unlock = r.unlockFor(unlock) // a read may wait for a release in flight, which may need the lock
			if s, err = r.read(ctx, resource, keys); err != nil {
				return s, 0, err
			}
			fresh = true
			continue
		}
		if unlock == nil {
			// Reads and answers that write nothing never wait for the lock;
			// writers do, and then decide again if a writer of this process
			// moved the record meanwhile.
			if unlock, err = r.locks.lock(ctx, resource); err != nil {
				return s, 0, err
			}
			if newer, ok := r.newerCached(resource, keys, s.RecordRev); ok {
				s, fresh = newer, false
				continue
			}
		}
		if conflicts >= r.cfg.CASRetriesMax {
			return s, 0, fmt.Errorf("%w: %s: %d compare-and-swap retries", wire.ErrConflict, resource, conflicts)
		}
		w.ReadKeys = readKeys(keys, w)
		bindDecidedOn(w, &s)
		early := r.releaseInFlight(ctx, resource)
		res, err := r.store.Commit(ctx, *w)
		if err != nil {
			rev, landed, rerr := r.landedDespite(ctx, err, w)
			if rerr != nil || !landed {
				return s, 0, storeError("commit", cmp.Or(rerr, err))
			}
			res = CommitResult{OK: true, Revision: rev}
		}
		if res.OK {
			r.rememberWrite(w, res.Revision)
			r.observe(&s, w, now)
			return s, res.Revision, nil
		}
		conflicts++
		s, fresh = res.Current, true
		r.rememberSnapshot(&s)
		if early != nil {
			// A release this process answered early was in flight: the
			// compare may have gone ahead of it. Decide after it (whose
			// retry may need the lock).
			unlock = r.unlockFor(unlock)
			if s, err = r.readAfter(ctx, early, resource, keys); err != nil {
				return s, 0, err
			}
		}
		if err := r.backoff(ctx, conflicts); err != nil {
			return s, 0, err
		}
	}
}

// landedDespite reads whether w, whose commit a store out of space
// answered with err (wire.ErrStoreFull), was applied all the same: etcd
// applies the write that crosses its quota and answers NOSPACE. Reads
// work without space, and w's record is one no other write makes (it
// names its own lease, fence and instants), so finding it stored means
// w committed, at the record's mod revision; then the caller goes on as
// after any commit, and no grant is lost to an error its client would
// take as a refusal. A write without a record is not looked for.
func (r *Registry) landedDespite(ctx context.Context, err error, w *Write) (uint64, bool, error) {
	if !errors.Is(err, wire.ErrStoreFull) || w.Record == nil || w.Resource == "" {
		return 0, false, nil
	}
	s, rerr := r.store.Read(ctx, w.Resource, nil)
	if rerr != nil {
		return 0, false, fmt.Errorf("%w (and reading whether it landed: %w)", err, rerr)
	}
	if s.RecordRaw == nil || !StoredRecordIs(s.RecordRaw, w.Record, nil) {
		return 0, false, nil
	}
	return s.RecordRev, true, nil
}

// read takes a linearizable snapshot and refreshes the cache from it;
// it reads a resource after any release this process answered early on it
// (awaitRelease), so this process reads its own releases.
func (r *Registry) read(ctx context.Context, resource string, keys []lockstate.RequestKey) (Snapshot, error) {
	if err := r.awaitRelease(ctx, resource); err != nil {
		return Snapshot{}, storeError("read", err)
	}
	s, err := r.store.Read(ctx, resource, keys)
	if err != nil {
		return s, storeError("read", err)
	}
	r.rememberSnapshot(&s)
	return s, nil
}

// storeError classifies a store failure: decoding damage stays ErrCorrupt,
// a store out of space ErrStoreFull, a context error stays itself, anything else is ErrUnavailable (outcome
// unknown for a commit).
func storeError(op string, err error) error {
	if errors.Is(err, wire.ErrCorrupt) || errors.Is(err, wire.ErrStoreFull) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("registry: store %s: %w", op, err)
	}
	return fmt.Errorf("%w: %s: %w", wire.ErrUnavailable, op, err)
}

// writeFor builds the compare-and-swap of a decision made on s: the record
// and settings compared at the revisions s saw, each granted request's new
// entry compared as s saw it (absent, unless s is wrong), and put in the
// sweep index at its first look (lockstate.FirstSweepMs).
func (r *Registry) writeFor(s *Snapshot, rec *lockstate.Record, entries []lockstate.EntryPut) *Write {
	if rec == nil && len(entries) == 0 {
		return nil
	}
	w := &Write{Resource: s.Resource, RecordRev: s.RecordRev, Record: rec, SettingsRev: s.SettingsRev}
	for _, p := range entries {
		e := p.Entry
		w.Requests = append(w.Requests, RequestWrite{Key: p.Key, Entry: &e, Compare: true, ModRev: s.slot(p.Key).ModRev})
		w.Sweeps = append(w.Sweeps, SweepWrite{Item: SweepItem{AtMs: lockstate.FirstSweepMs(e.Grant, r.lim), Key: p.Key, Resource: wire.RecordName(e.Grant.Resource)}})
	}
	return w
}

func (r *Registry) now() int64 { return toMs(r.clock.Now()) }

// issueFresh answers the request a grant was just made for (an acquire
// granted, or a waiter handed the lease): a grant carrying its own HELD
// statement is signed alone, the answer's Status nil; an earlier-form
// grant (Config.SeparateStatus) gets a HELD status as issue gives it.
func (r *Registry) issueFresh(body lockstate.GrantBody, createRev uint64, expiresAtMs int64, statusRev uint64, now int64, set lockstate.Settings) (wire.Issued, error) {
	if body.HeldUntilMs == 0 {
		return r.issue(body, createRev, grant.StateHeld, expiresAtMs, statusRev, now, set)
	}
	g, err := body.Grant(createRev)
	if err != nil {
		return wire.Issued{}, err
	}
	if err := r.checkSigning(set); err != nil {
		return wire.Issued{}, err
	}
	gp, err := r.signGrant(body, g)
	if err != nil {
		return wire.Issued{}, err
	}
	gates, err := r.gateProofs(g, nil)
	if err != nil {
		return wire.Issued{}, err
	}
	return wire.Issued{Grant: g, GrantProof: gp, ExpiresAfterMs: max(expiresAtMs-now, 0), GateProofs: gates}, nil
}

// checkSigning refuses to sign under a revoked epoch of this registry or
// under settings older than it has seen (checkGeneration).
func (r *Registry) checkSigning(set lockstate.Settings) error {
	if r.cfg.IssuerEpoch < set.RevokedBelowEpoch {
		return fmt.Errorf("%w: this registry's epoch %d is below %d", wire.ErrEpochRevoked, r.cfg.IssuerEpoch, set.RevokedBelowEpoch)
	}
	return r.checkGeneration(set)
}

// issue completes a stored grant body with its backend revision and signs
// it with a fresh status: a retried acquire's answer, a renewal's, a
// status query's. A revoked grant gets neither proof, and nothing is
// signed under settings older than the registry has seen
// (checkGeneration).
func (r *Registry) issue(body lockstate.GrantBody, createRev uint64, state grant.State, expiresAtMs int64, statusRev uint64, now int64, set lockstate.Settings) (wire.Issued, error) {
	g, err := body.Grant(createRev)
	if err != nil {
		return wire.Issued{}, err
	}
	st := &grant.Status{
		Grant: g.Digest(), State: state, BackendRevision: statusRev, IssuerEpoch: r.cfg.IssuerEpoch,
		IssuedAt: fromMs(now), ValidUntil: fromMs(lockstate.StatusValidUntil(state, expiresAtMs, now, r.lim)),
	}
	out := wire.Issued{Grant: g, Status: st}
	if state == grant.StateHeld {
		out.ExpiresAfterMs = max(expiresAtMs-now, 0)
	}
	if state == grant.StateRevoked {
		return out, nil
	}
	if err := r.checkSigning(set); err != nil {
		return wire.Issued{}, err
	}
	if out.GrantProof, out.StatusProof, err = r.signPair(body, g, st); err != nil {
		return wire.Issued{}, err
	}
	if out.GateProofs, err = r.gateProofs(g, st); err != nil {
		return wire.Issued{}, err
	}
	return out, nil
}

// backoffAfter is how many conflicts in a row are retried at once; later
// retries wait a random slice of backoffMsMax, so replicas racing on one
// record stop colliding in lockstep.
const (
	backoffAfter = 2
	backoffMsMax = 8
)

func (r *Registry) backoff(ctx context.Context, conflicts int) error {
	if conflicts <= backoffAfter {
		return nil
	}
	d := time.Duration(r.jitterMs(backoffMsMax*int64(time.Millisecond))) + time.Microsecond
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-r.clock.After(d):
		return nil
	}
}

// readKeys is keys plus every request key the write compares, so a failed
// compare returns what the next decision needs to see.
func readKeys(keys []lockstate.RequestKey, w *Write) []lockstate.RequestKey {
	out := append([]lockstate.RequestKey(nil), keys...)
	for _, rw := range w.Requests {
		if rw.Compare && !slices.Contains(out, rw.Key) {
			out = append(out, rw.Key)
		}
	}
	return out
}

// bindDecidedOn names in w the record and settings of s, the snapshot it
// was decided on, so the store compares contents as well as revisions
// (see Write.RecordWas). The core never changes a snapshot's record in
// place (it clones), so s still holds what the decision read.
func bindDecidedOn(w *Write, s *Snapshot) {
	if w.Resource != "" && w.RecordRev != 0 && w.RecordRev == s.RecordRev {
		w.RecordWas, w.RecordWasRaw = s.Record, s.RecordRaw
	}
	if w.SettingsRev != 0 && w.SettingsRev == s.SettingsRev {
		w.SettingsWas = &s.Settings
	}
}
