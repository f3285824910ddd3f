package zkstore

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
)

// readAttemptsMax bounds how often Read starts over because a node it
// read changed after the revision it read first. Each attempt is three
// round trips; a node changes inside that window only under a write to
// that very node (or, for an absent one, to its directory).
const readAttemptsMax = 16

// ErrNoConsistentRead: Read found a node changed after its revision on
// every attempt. Nothing is wrong with the store; the caller may retry.
var ErrNoConsistentRead = errors.New("zkstore: no consistent read")

// node is one znode as read.
type node struct {
	ok   bool // exists
	data []byte
	stat zk.Stat
}

// modRev is the item's mod revision: 0 when the node is missing or empty.
func (n node) modRev() uint64 {
	if !n.ok || len(n.data) == 0 {
		return 0
	}
	return uint64(n.stat.Mzxid)
}

// view is what a read or a commit saw: nodes by path.
type view struct {
	rev   uint64 // the revision it is consistent at (0 for a commit's quick look)
	nodes map[string]node
}

// getAll reads paths concurrently: the client pipelines them on the
// session, so they cost one round trip.
func (s *Store) getAll(ctx context.Context, paths []string, into map[string]node) error {
	type got struct {
		p   string
		n   node
		err error
	}
	ch := make(chan got, len(paths))
	var wg sync.WaitGroup
	for _, p := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			data, st, err := s.c.Get(p)
			switch {
			case errors.Is(err, zk.ErrNoNode):
				ch <- got{p: p}
			case err != nil:
				ch <- got{p: p, err: err}
			default:
				ch <- got{p: p, n: node{ok: true, data: data, stat: *st}}
			}
		}()
	}
	err := do(ctx, func() error {
		wg.Wait()
		close(ch)
		return nil
	})
	if err != nil {
		return err
	}
	for g := range ch {
		if g.err != nil {
			return fmt.Errorf("get %s: %w", g.p, g.err)
		}
		into[g.p] = g.n
	}
	return nil
}

// sync brings the session's server up to date with the leader, so what
// it reads next includes every commit made before the call.
func (s *Store) sync(ctx context.Context) error {
	return do(ctx, func() error {
		_, err := s.c.Sync(s.root)
		return err
	})
}

// revision reads <root>/rev: its mzxid is the revision of the last
// commit the session's server has applied.
func (s *Store) revision(ctx context.Context) (node, error) {
	st, err := call(ctx, func() (*zk.Stat, error) {
		_, st, err := s.c.Get(s.revPath())
		return st, err
	})
	if err != nil {
		return node{}, fmt.Errorf("get %s: %w", s.revPath(), err)
	}
	return node{ok: true, stat: *st}, nil
}

// readPaths are the nodes a snapshot of resource and keys needs.
func (s *Store) readPaths(resource string, keys []lockstate.RequestKey) []string {
	var ps []string
	if resource != "" {
		ps = append(ps, s.recordPath(resource))
	}
	ps = append(ps, s.settingsPath())
	seen := map[string]bool{}
	for _, k := range keys {
		if p := s.requestPath(k); !seen[p] {
			seen[p] = true
			ps = append(ps, p)
		}
	}
	return ps
}

// setPaths are the nodes a snapshot of resource, members and keys needs.
func (s *Store) setPaths(resource string, members []string, keys []lockstate.RequestKey) []string {
	ps := s.readPaths(resource, keys)
	for _, m := range members {
		ps = append(ps, s.recordPath(m))
	}
	return ps
}

// readView reads paths as of one revision R, at least every commit before
// the call when synced: R first, then the nodes, then the parents of the
// nodes found missing and of guarded (the entries a commit will pin). A
// node present with mzxid <= R is as it was at R; a missing node, or a
// guarded one, is as it was at R when its parent's pzxid <= R (no child
// created or deleted since R). Otherwise it starts over.
func (s *Store) readView(ctx context.Context, paths []string, guarded map[string]bool, synced bool) (*view, error) {
	if synced {
		if err := s.sync(ctx); err != nil {
			return nil, err
		}
	}
	for range readAttemptsMax {
		revNode, err := s.revision(ctx)
		if err != nil {
			return nil, err
		}
		rev := uint64(revNode.stat.Mzxid)
		v := &view{rev: rev, nodes: make(map[string]node, len(paths)+1)}
		v.nodes[s.revPath()] = revNode
		if err := s.getAll(ctx, paths, v.nodes); err != nil {
			return nil, err
		}
		if !allAtOrBelow(v, paths, rev) {
			continue
		}
		var parents []string
		seen := map[string]bool{}
		for _, p := range paths {
			if d := path.Dir(p); (!v.nodes[p].ok || guarded[p]) && !seen[d] {
				seen[d] = true
				parents = append(parents, d)
			}
		}
		dirs := make(map[string]node, len(parents))
		if err := s.getAll(ctx, parents, dirs); err != nil {
			return nil, err
		}
		if parentsQuiet(dirs, rev) {
			for p, n := range dirs {
				v.nodes[p] = n
			}
			return v, nil
		}
	}
	return nil, ErrNoConsistentRead
}

// allAtOrBelow reports whether every present node of paths is as it was
// at rev: last modified at or before it, or empty and never set since its
// creation (an absent item before and after: the settings node the store
// made, a record's placeholder).
func allAtOrBelow(v *view, paths []string, rev uint64) bool {
	for _, p := range paths {
		n := v.nodes[p]
		if n.ok && uint64(n.stat.Mzxid) > rev && (len(n.data) > 0 || n.stat.Mzxid != n.stat.Czxid) {
			return false
		}
	}
	return true
}

// parentsQuiet reports whether no child of dirs was created or deleted
// after rev: the pzxid is at most rev, or equals the czxid (no child ever).
// A missing directory never held a child: directories are never deleted.
func parentsQuiet(dirs map[string]node, rev uint64) bool {
	for _, n := range dirs {
		if n.ok && uint64(n.stat.Pzxid) > rev && n.stat.Pzxid != n.stat.Czxid {
			return false
		}
	}
	return true
}

// Read implements registry.Store. It returns registry.ErrStoreWentBack
// when what it read is older than what this Store saw before (history.go).
func (s *Store) Read(ctx context.Context, resource string, keys []lockstate.RequestKey) (registry.Snapshot, error) {
	paths := s.readPaths(resource, keys)
	base := s.hist.before(s, append(paths, s.revPath()))
	v, err := s.readView(ctx, paths, nil, true)
	if err == nil {
		err = s.hist.after(s, base, v.nodes)
	}
	if err != nil {
		return registry.Snapshot{}, fmt.Errorf("zkstore: read: %w", err)
	}
	return s.snapshotOf(v, resource, keys)
}

// ReadSet implements registry.Store as Read does, over every member's
// record.
func (s *Store) ReadSet(ctx context.Context, resources []string, keys []lockstate.RequestKey) (registry.Snapshot, error) {
	if err := registry.CheckSetNames(resources); err != nil {
		return registry.Snapshot{}, fmt.Errorf("zkstore: read set: %w", err)
	}
	paths := s.setPaths("", resources, keys)
	base := s.hist.before(s, append(paths, s.revPath()))
	v, err := s.readView(ctx, paths, nil, true)
	if err == nil {
		err = s.hist.after(s, base, v.nodes)
	}
	if err != nil {
		return registry.Snapshot{}, fmt.Errorf("zkstore: read set: %w", err)
	}
	snap, err := s.snapshotOf(v, "", keys)
	if err == nil {
		err = s.membersOf(v, resources, &snap)
	}
	return snap, err
}

// membersOf decodes the records of members in a consistent view into
// snap.Members.
func (s *Store) membersOf(v *view, members []string, snap *registry.Snapshot) error {
	snap.Members = make([]registry.MemberSlot, len(members))
	for i, m := range members {
		slot := registry.MemberSlot{Resource: m}
		if n := v.nodes[s.recordPath(m)]; n.modRev() != 0 {
			rec, err := registry.DecodeRecord(n.data)
			if err != nil {
				return fmt.Errorf("zkstore: %s: %w", m, err)
			}
			slot.Record, slot.RecordRev, slot.RecordRaw = rec, n.modRev(), n.data
		}
		snap.Members[i] = slot
	}
	return nil
}

// snapshotOf decodes a consistent view.
func (s *Store) snapshotOf(v *view, resource string, keys []lockstate.RequestKey) (registry.Snapshot, error) {
	snap := registry.Snapshot{Revision: v.rev, Resource: resource}
	if resource != "" {
		if n := v.nodes[s.recordPath(resource)]; n.modRev() != 0 {
			rec, err := registry.DecodeRecord(n.data)
			if err != nil {
				return snap, fmt.Errorf("zkstore: %s: %w", resource, err)
			}
			snap.Record, snap.RecordRev, snap.RecordRaw = rec, n.modRev(), n.data
		}
	}
	if n := v.nodes[s.settingsPath()]; n.modRev() != 0 {
		set, err := registry.DecodeSettings(n.data)
		if err != nil {
			return snap, fmt.Errorf("zkstore: %w", err)
		}
		snap.Settings, snap.SettingsRev = set, n.modRev()
	}
	for _, k := range keys {
		slot, err := slotOf(k, v.nodes[s.requestPath(k)])
		if err != nil {
			return snap, err
		}
		snap.Requests = append(snap.Requests, slot)
	}
	return snap, nil
}

// slotOf decodes one request entry's node.
func slotOf(k lockstate.RequestKey, n node) (registry.RequestSlot, error) {
	slot := registry.RequestSlot{Key: k}
	if n.modRev() == 0 {
		return slot, nil
	}
	e, err := registry.DecodeRequestEntry(n.data)
	if err != nil {
		return slot, fmt.Errorf("zkstore: request %s: %w", k.RequestID, err)
	}
	slot.Entry, slot.ModRev, slot.CreateRev = e, n.modRev(), uint64(n.stat.Czxid)
	return slot, nil
}
