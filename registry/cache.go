package registry

import (
	"github.com/fencegate/fencegate/registry/lockstate"
	// The cache holds the last record (and settings) this Registry saw, so a
	// warm acquire or release is one compare-and-swap instead of a read and a
	// compare-and-swap. It is never trusted for an answer: a write decided on
	// it is compared at the revisions it saw, and an answer that writes
	// nothing is re-decided on a linearizable read (see casLoop).
)

// cachedSnapshot builds a snapshot from the cache, with every request entry
// assumed absent (a wrong guess fails the entry's compare).
func (r *Registry) cachedSnapshot(resource string, keys []lockstate.RequestKey) (Snapshot, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.cache[resource]
	if !ok || !r.sets.known {
		return Snapshot{}, false
	}
	s := Snapshot{
		Revision: max(c.rev, r.sets.rev), Resource: resource, Record: c.record, RecordRev: c.rev, RecordRaw: c.raw,
		Settings: r.sets.settings, SettingsRev: r.sets.rev,
	}
	for _, k := range keys {
		s.Requests = append(s.Requests, RequestSlot{Key: k})
	}
	return s, true
}

// newerCached returns the cached snapshot if its record is newer than rev.
func (r *Registry) newerCached(resource string, keys []lockstate.RequestKey, rev uint64) (Snapshot, bool) {
	r.mu.Lock()
	c, ok := r.cache[resource]
	r.mu.Unlock()
	if !ok || c.rev <= rev {
		return Snapshot{}, false
	}
	return r.cachedSnapshot(resource, keys)
}

func (r *Registry) rememberSnapshot(s *Snapshot) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dropAheadOfStoreLocked(s)
	if c, ok := r.cache[s.Resource]; ok && s.Resource != "" && c.rev > s.RecordRev && c.rev <= s.Revision {
		// A read at a revision the cached record had reached shows the
		// record older or absent: the cached write is not in the store's
		// history (a restore whose revisions have since passed it). Kept,
		// it would be offered to every decision as newer than the store
		// (newerCached), each deciding on it, none committing.
		delete(r.cache, s.Resource)
	}
	if s.Resource != "" {
		r.putRecordLocked(s.Resource, s.Record, s.RecordRaw, s.RecordRev)
	}
	r.putSettingsLocked(s.Settings, s.SettingsRev)
}

// rememberRecord records a record seen by a watch.
func (r *Registry) rememberRecord(resource string, rec *lockstate.Record, rev uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.putRecordLocked(resource, rec, nil, rev)
}

func (r *Registry) rememberWrite(w *Write, rev uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if w.Resource != "" && w.Record != nil {
		r.putRecordLocked(w.Resource, w.Record, nil, rev) // in the form the store writes
	}
	if w.Settings != nil {
		r.putSettingsLocked(*w.Settings, rev)
	}
}

// putRecordLocked keeps the newer of the cached and the given record, with
// its stored bytes when known (raw). An absent record (rev 0) is cached as
// such, so a first acquire of a new resource is one round trip too.
func (r *Registry) putRecordLocked(resource string, rec *lockstate.Record, raw []byte, rev uint64) {
	if c, ok := r.cache[resource]; ok && c.rev > rev {
		return
	}
	if _, ok := r.cache[resource]; !ok && len(r.cache) >= r.cfg.CacheResourcesMax {
		clear(r.cache) // crude but bounded; a miss only costs a read
	}
	r.cache[resource] = cachedRecord{record: rec, raw: raw, rev: rev}
}

func (r *Registry) putSettingsLocked(s lockstate.Settings, rev uint64) {
	r.genSeen = max(r.genSeen, s.FenceGeneration)
	if r.sets.known && r.sets.rev > rev {
		return
	}
	r.sets = cachedSettings{settings: s, rev: rev, known: true}
}

// dropAheadOfStoreLocked forgets cached items whose revision the store,
// as read in s, has not reached. The cache keeps the higher revision of
// what it sees, but a store restored to an older state (an etcd snapshot
// restore without --bump-revision) starts below it: left alone, the
// pre-restore record would be offered to every decision, each failing its
// compare, until the store's revisions passed it. (A read answered just
// before a concurrent commit of this process also looks like this; it
// costs that item one cache miss.)
func (r *Registry) dropAheadOfStoreLocked(s *Snapshot) {
	if c, ok := r.cache[s.Resource]; ok && s.Resource != "" && c.rev > s.Revision {
		delete(r.cache, s.Resource)
	}
	if r.sets.known && r.sets.rev > s.Revision {
		r.sets = cachedSettings{}
	}
}
