package zkstore

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/go-zookeeper/zk"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/wire"
)

// ScanRequests implements registry.Store: owners in order, each owner's
// buckets in order from after's, each bucket's entries in order, reading
// only the buckets the page reaches. Entries deleted between the listing
// and the read are skipped.
func (s *Store) ScanRequests(ctx context.Context, after registry.RequestKey, limit int) ([]registry.RequestSlot, error) {
	if limit <= 0 {
		return nil, nil
	}
	if err := s.sync(ctx); err != nil {
		return nil, fmt.Errorf("zkstore: scan: %w", err)
	}
	owners, err := s.children(ctx, s.root+requestDir)
	if err != nil {
		return nil, err
	}
	var out []registry.RequestSlot
	for _, owner := range owners {
		if owner < after.Owner {
			continue
		}
		buckets, err := s.children(ctx, s.ownerPath(owner))
		if err != nil {
			return nil, err
		}
		for _, b := range buckets {
			if owner == after.Owner && b < bucketOf(after.RequestID) {
				continue // every ID in it sorts below after's
			}
			if out, err = s.scanBucket(ctx, owner, b, after, limit, out); err != nil || len(out) == limit {
				return out, err
			}
		}
	}
	return out, nil
}

// scanBucket appends the entries of one bucket after after, up to limit.
func (s *Store) scanBucket(ctx context.Context, owner, bucket string, after registry.RequestKey, limit int, out []registry.RequestSlot) ([]registry.RequestSlot, error) {
	ids, err := s.children(ctx, s.ownerPath(owner)+"/"+nameOf(bucket))
	if err != nil {
		return out, err
	}
	var keys []registry.RequestKey
	for _, id := range ids {
		if k := (registry.RequestKey{Owner: owner, RequestID: id}); after.Less(k) {
			keys = append(keys, k)
		}
	}
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

// children lists the keys named under p, in order; none when p is missing.
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
