package registry

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/wire"
)

// A release answered early (Config.ReleaseEarly). It decides as a
// durable release does, under the resource's lock, on the cached record;
// then, instead of waiting for its commit, it names the record its write
// puts as this process's view of the resource (provisional: a later
// decision here is compared against its contents, so a write decided on
// it commits only after the release did), hands the commit to a goroutine
// of its own and answers. Until that commit returns, this process's
// linearizable reads of the resource wait for it (a release, then a
// status query, here reads its own release), and a compare that fails
// meanwhile waits for it before deciding again.
//
// Why no safety property moves: nothing is granted off the provisional
// record but by a commit compared against it. A queued waiter is handed
// the lease in the release's own transaction and hears of it from the
// store, after that commit; an acquire of this process decided on the
// provisional record commits only where the release landed. A successor's
// fence is therefore above the released one whether the release commits,
// fails its compare (it is decided again, as a durable release would be)
// or is lost (the lease is then still the holder in the store, and ends
// at its TTL like a crashed owner's, the next grant's fence above it).

// releaseCommitTimeoutMs bounds the commit of a release answered early,
// retries after a failed compare included, once its caller has its
// answer: a commit not done by then is counted lost (ReleasesLost) and
// the lease ends at its TTL.
const releaseCommitTimeoutMs = 10_000

// earlyReleases are the releases answered before their commits returned.
type earlyReleases struct {
	mu       sync.Mutex
	inflight map[string]*earlyRelease // resource → its latest release in flight
	wg       sync.WaitGroup
	lost     atomic.Uint64
}

// earlyRelease is one release in flight; done closes once its commit
// returned (or was given up).
type earlyRelease struct{ done chan struct{} }

// ownRelease is the context key under which a release's own commit (and
// its retries) runs: its reads must not wait for itself.
type ownRelease struct{}

// releaseEarly is a release answered once its commit is handed to the
// store. A decision that writes nothing (an error, a release already
// done) is not answered early: it stands on a fresh read (releaseDurable).
func (r *Registry) releaseEarly(ctx context.Context, owner, resource, lease string) error {
	s, ok := r.cachedSnapshot(resource, nil)
	if !ok {
		var err error
		if s, err = r.read(ctx, resource, nil); err != nil {
			return err
		}
	}
	unlock, err := r.locks.lock(ctx, resource)
	if err != nil {
		return err
	}
	if newer, ok := r.newerCached(resource, nil, s.RecordRev); ok {
		s = newer
	}
	now := r.now()
	w, err := r.decideRelease(owner, lease)(&s, now)
	if w == nil || err != nil {
		unlock()
		return r.releaseDurable(ctx, owner, resource, lease)
	}
	w.ReadKeys = readKeys(nil, w)
	bindDecidedOn(w, &s)
	p := r.early.start(resource)
	r.rememberProvisional(resource, w, s.RecordRev)
	handed := make(chan struct{})
	go r.commitEarly(context.WithoutCancel(ctx), p, s, w, now, owner, lease, unlock, handed)
	<-handed
	return nil
}

// commitEarly commits a release answered early: it frees the resource's
// lock as it hands the write to the store (the next writer here decides
// on the provisional record meanwhile), and after a failed compare
// decides the release again on what the store returned.
func (r *Registry) commitEarly(ctx context.Context, p *earlyRelease, s Snapshot, w *Write, now int64, owner, lease string, unlock func(), handed chan<- struct{}) {
	defer r.early.finish(s.Resource, p)
	ctx, cancel := context.WithTimeout(context.WithValue(ctx, ownRelease{}, p), releaseCommitTimeoutMs*time.Millisecond)
	defer cancel()
	unlock()
	close(handed)
	res, err := r.store.Commit(ctx, *w)
	if err != nil {
		rev, landed, rerr := r.landedDespite(ctx, err, w)
		if rerr != nil || !landed {
			r.early.lost.Add(1)
			r.forgetRecord(s.Resource)
			return
		}
		res = CommitResult{OK: true, Revision: rev}
	}
	if res.OK {
		r.rememberWrite(w, res.Revision)
		r.observe(&s, w, now)
		return
	}
	// Another writer moved the record (a replica, a sweep): decide again
	// on what the store returned, as a durable release would have.
	r.forgetRecord(s.Resource)
	r.rememberSnapshot(&res.Current)
	if err := r.releaseDurable(ctx, owner, s.Resource, lease); err != nil && !leaseOver(err) {
		r.early.lost.Add(1)
	}
}

// leaseOver reports whether a release's error says the lease had ended
// anyway (nothing is left to commit).
func leaseOver(err error) bool {
	return errors.Is(err, wire.ErrLeaseExpired) || errors.Is(err, wire.ErrNotHolder) ||
		errors.Is(err, wire.ErrLeaseBroken) || errors.Is(err, wire.ErrEpochRevoked)
}

// rememberProvisional caches the record w puts as resource's, at rev,
// the revision of the record it was decided on: a decision on it names
// it as the record it was decided on (RecordWas), which the store
// compares by contents.
func (r *Registry) rememberProvisional(resource string, w *Write, rev uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.putRecordLocked(resource, w.Record, nil, rev)
}

// forgetRecord drops resource's cached record: the next decision reads.
func (r *Registry) forgetRecord(resource string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.cache, resource)
}

func (e *earlyReleases) start(resource string) *earlyRelease {
	p := &earlyRelease{done: make(chan struct{})}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.inflight == nil {
		e.inflight = make(map[string]*earlyRelease)
	}
	e.inflight[resource] = p
	e.wg.Add(1)
	return p
}

func (e *earlyReleases) finish(resource string, p *earlyRelease) {
	e.mu.Lock()
	if e.inflight[resource] == p {
		delete(e.inflight, resource)
	}
	e.mu.Unlock()
	close(p.done)
	e.wg.Done()
}

// releaseInFlight is the release answered early in flight on resource,
// if any but ctx's own: a commit sent now may go ahead of it.
func (r *Registry) releaseInFlight(ctx context.Context, resource string) *earlyRelease {
	r.early.mu.Lock()
	p := r.early.inflight[resource]
	r.early.mu.Unlock()
	if p == nil || ctx.Value(ownRelease{}) == p {
		return nil
	}
	return p
}

// awaitRelease waits until no release answered early is in flight on
// resource (but ctx's own).
func (r *Registry) awaitRelease(ctx context.Context, resource string) error {
	for p := r.releaseInFlight(ctx, resource); p != nil; p = r.releaseInFlight(ctx, resource) {
		select {
		case <-p.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// unlockFor frees a resource lock casLoop holds (unlock, nil when none)
// before it waits for a release answered early: that release's commit,
// after a failed compare, decides again under the same lock. It returns
// nil, for casLoop to lock again before its next write.
func (r *Registry) unlockFor(unlock func()) func() {
	if unlock != nil {
		unlock()
	}
	return nil
}

// readAfter reads resource once the release p, whose commit a compare
// that just failed may have gone ahead of, has its outcome.
func (r *Registry) readAfter(ctx context.Context, p *earlyRelease, resource string, keys []lockstate.RequestKey) (Snapshot, error) {
	select {
	case <-p.done:
	case <-ctx.Done():
		return Snapshot{}, storeError("read", ctx.Err())
	}
	return r.read(ctx, resource, keys)
}

// FlushReleases waits until every release this Registry answered early
// has its commit's outcome (a graceful shutdown calls it before the
// process exits: a release still in flight then would be lost, and its
// lease would end at its TTL), or until ctx ends.
func (r *Registry) FlushReleases(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		r.early.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ReleasesLost counts the releases answered early whose commit this
// Registry could not make (an error of unknown outcome, or retries past
// releaseCommitTimeoutMs): each such lease ends at its TTL, unless the
// commit landed all the same.
func (r *Registry) ReleasesLost() uint64 { return r.early.lost.Load() }
