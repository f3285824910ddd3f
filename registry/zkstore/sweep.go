package zkstore

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/wire"
)

// The sweep index: <root>/s/<second>/<item>, one node per item, the
// resource its data. <second> is the item's instant in whole seconds, 16
// hex digits: a bucket holds one second of items, so no listing nears
// ZooKeeper's reply limit (jute.maxbuffer) at any rate this store
// commits, and <root>/s holds one child per second that has items (about
// the retention's worth). <item> is the instant in milliseconds, 16 hex
// digits, then nameOf(owner) and nameOf(request ID), each starting with
// "=" (escaped inside), so the name splits back.
//
// Items carry no revision and no compare (registry.Store), so a commit
// does not pin them: it looks which exist (sweepOps), creates those to
// put that are missing and deletes those to delete that are there; a
// multi refused because one changed in between is tried again with a
// fresh look, as Commit does for every refused multi. A bucket left empty
// more than sweepBucketIdleMs before the instant a scan looks up to is
// deleted by the scan; a commit that finds its bucket gone makes it again.

const (
	sweepDir = "/s"
	// sweepBucketIdleMs is how long after its second an empty bucket is
	// kept, 1 min: items are put at or after their writer's now, so a
	// bucket that far in the past gets none (a late one recreates it).
	sweepBucketIdleMs = 60_000
	// sweepDirsKnownMax bounds the buckets a store remembers to exist.
	sweepDirsKnownMax = 1024
)

func bucketName(atMs int64) string { return fmt.Sprintf("%016x", max(atMs, 0)/1000) }

func (s *Store) sweepBucketPath(atMs int64) string {
	return s.root + sweepDir + "/" + bucketName(atMs)
}

func (s *Store) sweepPath(it registry.SweepItem) string {
	return s.sweepBucketPath(it.AtMs) + "/" + fmt.Sprintf("%016x", max(it.AtMs, 0)) + nameOf(it.Key.Owner) + nameOf(it.Key.RequestID)
}

// sweepItemOf parses an item's node name (its Resource left empty).
func sweepItemOf(name string) (registry.SweepItem, bool) {
	if len(name) < 18 || name[16] != '=' {
		return registry.SweepItem{}, false
	}
	at, err := strconv.ParseInt(name[:16], 16, 64)
	rest := name[16:]
	i := strings.IndexByte(rest[1:], '=') + 1
	if err != nil || i <= 0 {
		return registry.SweepItem{}, false
	}
	owner, ok1 := keyOf(rest[:i])
	id, ok2 := keyOf(rest[i:])
	if !ok1 || !ok2 {
		return registry.SweepItem{}, false
	}
	return registry.SweepItem{AtMs: at, Key: lockstate.RequestKey{Owner: owner, RequestID: id}}, true
}

// sweepOps are w's sweep index writes as multi operations, decided on a
// look at which of its items exist; the buckets of the items it puts are
// made first.
func (s *Store) sweepOps(ctx context.Context, w registry.Write) ([]any, error) {
	if len(w.Sweeps) == 0 {
		return nil, nil
	}
	paths := make([]string, len(w.Sweeps))
	for i, sw := range w.Sweeps {
		paths[i] = s.sweepPath(sw.Item)
		if !sw.Delete {
			if err := s.ensureSweepBucket(ctx, sw.Item.AtMs); err != nil {
				return nil, err
			}
		}
	}
	nodes := make(map[string]node, len(paths))
	if err := s.getAll(ctx, paths, nodes); err != nil {
		return nil, fmt.Errorf("zkstore: commit: read sweep index: %w", err)
	}
	var ops []any
	for i, sw := range w.Sweeps {
		switch exists := nodes[paths[i]].ok; {
		case sw.Delete && exists:
			ops = append(ops, &zk.DeleteRequest{Path: paths[i], Version: -1})
		case !sw.Delete && !exists:
			ops = append(ops, &zk.CreateRequest{Path: paths[i], Data: []byte(sw.Item.Resource), Acl: s.acl})
		}
	}
	return ops, nil
}

// withSweeps puts sweep operations before the last of ops (the set of
// <root>/rev, whose reply carries the commit's revision).
func withSweeps(ops, sweeps []any) []any {
	if len(sweeps) == 0 {
		return ops
	}
	last := ops[len(ops)-1]
	return append(append(ops[:len(ops)-1:len(ops)-1], sweeps...), last)
}

// ensureSweepBucket makes the bucket of atMs unless known to exist.
func (s *Store) ensureSweepBucket(ctx context.Context, atMs int64) error {
	p := s.sweepBucketPath(atMs)
	s.mu.Lock()
	known := s.sweepDirs[p]
	s.mu.Unlock()
	if known {
		return nil
	}
	if err := s.create(ctx, p); err != nil {
		return fmt.Errorf("zkstore: create %s: %w", p, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.sweepDirs) >= sweepDirsKnownMax {
		clear(s.sweepDirs)
	}
	s.sweepDirs[p] = true
	return nil
}

// ScanSweep implements registry.Store: after a sync, the buckets from
// after's second up to beforeMs's are listed in order, each one's items
// sorted, and the resources of the page read. Empty buckets long past are
// deleted on the way.
func (s *Store) ScanSweep(ctx context.Context, after registry.SweepItem, beforeMs int64, limit int) ([]registry.SweepItem, error) {
	if limit <= 0 || beforeMs <= 0 {
		return nil, nil
	}
	if err := s.sync(ctx); err != nil {
		return nil, fmt.Errorf("zkstore: scan sweep index: %w", err)
	}
	buckets, err := s.children(ctx, s.root+sweepDir)
	if err != nil {
		return nil, err
	}
	sort.Strings(buckets)
	var out []registry.SweepItem
	for _, b := range buckets {
		if b < bucketName(after.AtMs) || b > bucketName(beforeMs-1) {
			continue
		}
		items, err := s.bucketItems(ctx, b, after, beforeMs)
		if err != nil {
			return nil, err
		}
		if len(items) == 0 {
			s.dropIdleBucket(ctx, b, beforeMs)
		}
		if out = append(out, items...); len(out) >= limit {
			out = out[:limit]
			break
		}
	}
	return out, s.readResources(ctx, out)
}

// bucketItems lists bucket b's items after after and due before beforeMs,
// in order.
func (s *Store) bucketItems(ctx context.Context, b string, after registry.SweepItem, beforeMs int64) ([]registry.SweepItem, error) {
	names, err := s.children(ctx, s.root+sweepDir+"/"+b)
	if err != nil {
		return nil, err
	}
	var items []registry.SweepItem
	for _, n := range names {
		it, ok := sweepItemOf(n)
		if !ok {
			return nil, fmt.Errorf("zkstore: scan sweep index: %w: node %s/%s", wire.ErrCorrupt, b, n)
		}
		if it.AtMs < beforeMs && after.Less(it) {
			items = append(items, it)
		}
	}
	sort.Slice(items, func(i, j int) bool { return items[i].Less(items[j]) })
	return items, nil
}

// readResources fills each item's Resource from its node; an item deleted
// since the listing keeps "" (the sweep then finds no entry under it).
func (s *Store) readResources(ctx context.Context, items []registry.SweepItem) error {
	paths := make([]string, len(items))
	for i, it := range items {
		paths[i] = s.sweepPath(it)
	}
	nodes := make(map[string]node, len(paths))
	if err := s.getAll(ctx, paths, nodes); err != nil {
		return fmt.Errorf("zkstore: scan sweep index: %w", err)
	}
	for i := range items {
		items[i].Resource = string(nodes[paths[i]].data)
	}
	return nil
}

// dropIdleBucket deletes bucket b when it ended sweepBucketIdleMs before
// beforeMs; a bucket that got a child meanwhile stays (ZooKeeper refuses
// to delete it).
func (s *Store) dropIdleBucket(ctx context.Context, b string, beforeMs int64) {
	sec, err := strconv.ParseInt(b, 16, 64)
	if err != nil || (sec+1)*1000+sweepBucketIdleMs > beforeMs {
		return
	}
	p := s.root + sweepDir + "/" + b
	err = do(ctx, func() error { return s.c.Delete(p, -1) })
	if err == nil || errors.Is(err, zk.ErrNoNode) {
		s.mu.Lock()
		delete(s.sweepDirs, p)
		s.mu.Unlock()
	}
}
