package zkstore

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/go-zookeeper/zk"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/wire"
)

// ScanRequests implements registry.Store: owners in order, each owner's
// request IDs in order (its buckets listed and merged), then the entries
// of the page read. Entries deleted between the listing and the read are
// skipped.
func (s *Store) ScanRequests(ctx context.Context, after lockstate.RequestKey, limit int) ([]registry.RequestSlot, error) {
	if limit <= 0 {
		return nil, nil
	}
	if err := s.sync(ctx); err != nil {
		return nil, fmt.Errorf("zkstore: scan: %w", err)
	}
	names, err := s.children(ctx, s.root+requestDir)
	if err != nil {
		return nil, err
	}
	owners, err := keysOf(s.root+requestDir, names)
	if err != nil {
		return nil, err
	}
	var out []registry.RequestSlot
	for _, owner := range owners {
		if owner < after.Owner {
			continue
		}
		ids, err := s.ownerIDs(ctx, owner)
		if err != nil {
			return nil, err
		}
		var keys []lockstate.RequestKey
		for _, id := range ids {
			if k := (lockstate.RequestKey{Owner: owner, RequestID: id}); after.Less(k) {
				keys = append(keys, k)
			}
		}
		if out, err = s.readSlots(ctx, keys, limit, out); err != nil || len(out) == limit {
			return out, err
		}
	}
	return out, nil
}

// readSlots appends the present entries of keys, in order, up to limit.
func (s *Store) readSlots(ctx context.Context, keys []lockstate.RequestKey, limit int, out []registry.RequestSlot) ([]registry.RequestSlot, error) {
	for len(keys) > 0 && len(out) < limit {
		batch := keys[:min(len(keys), limit-len(out))]
		keys = keys[len(batch):]
		paths := make([]string, len(batch))
		for i, k := range batch {
			paths[i] = s.requestPath(k)
		}
		nodes := make(map[string]node, len(paths))
		if err := s.getAll(ctx, paths, nodes); err != nil {
			return out, fmt.Errorf("zkstore: scan: %w", err)
		}
		for i, k := range batch {
			slot, err := slotOf(k, nodes[paths[i]])
			if err != nil {
				return out, err
			}
			if slot.Entry != nil {
				out = append(out, slot)
			}
		}
	}
	return out, nil
}

// listing is one owner's request IDs by bucket, with each bucket's
// cversion when listed: a sweep pages through an owner, and a bucket whose
// cversion has not moved (no child created or deleted) needs no relisting.
type listing struct {
	owner   string
	buckets map[string]bucketIDs
}

type bucketIDs struct {
	cversion int32
	ids      []string
}

// ownerIDs returns owner's request IDs in order: its buckets' stats in one
// round trip, and the children of those that changed since the last call
// for this owner.
func (s *Store) ownerIDs(ctx context.Context, owner string) ([]string, error) {
	buckets, err := s.children(ctx, s.ownerPath(owner))
	if err != nil {
		return nil, err
	}
	paths := make([]string, len(buckets))
	for i, b := range buckets {
		paths[i] = s.ownerPath(owner) + "/" + b
	}
	stats := make(map[string]node, len(paths))
	if err := s.getAll(ctx, paths, stats); err != nil {
		return nil, fmt.Errorf("zkstore: scan: %w", err)
	}
	s.mu.Lock()
	prev := s.listed
	s.mu.Unlock()
	next := &listing{owner: owner, buckets: make(map[string]bucketIDs, len(buckets))}
	var ids []string
	for i, b := range buckets {
		st := stats[paths[i]]
		got, ok := bucketIDs{}, false
		if prev != nil && prev.owner == owner {
			got, ok = prev.buckets[b]
			ok = ok && st.ok && got.cversion == st.stat.Cversion
		}
		if !ok {
			names, err := s.children(ctx, paths[i])
			if err != nil {
				return nil, err
			}
			if got.ids, err = keysOf(paths[i], names); err != nil {
				return nil, err
			}
			got.cversion = st.stat.Cversion // as of before the listing: a change since relists next time
		}
		next.buckets[b] = got
		ids = append(ids, got.ids...)
	}
	s.mu.Lock()
	s.listed = next
	s.mu.Unlock()
	sort.Strings(ids)
	return ids, nil
}

// children lists the names under p; none when p is missing.
func (s *Store) children(ctx context.Context, p string) ([]string, error) {
	names, err := call(ctx, func() ([]string, error) {
		names, _, err := s.c.Children(p)
		return names, err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("zkstore: scan: children of %s: %w", p, err)
	}
	return names, nil
}

// keysOf decodes the names under p, in key order.
func keysOf(p string, names []string) ([]string, error) {
	keys := make([]string, 0, len(names))
	for _, n := range names {
		k, ok := keyOf(n)
		if !ok {
			return nil, fmt.Errorf("zkstore: scan: %w: node %s/%s", wire.ErrCorrupt, p, n)
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys, nil
}
