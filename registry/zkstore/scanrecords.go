package zkstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/fencegate/fencegate/registry"
)

// Listing records on ZooKeeper. Every record is a child of one node
// (<root>/r), and getChildren answers every child of a node in one
// reply: there is no ranged or paged form of it. A page that lists the
// children for itself costs the number of records (issue 49), and the
// reply grows with them (about the names' bytes plus 4 a name; the Go
// client reads any size, a Java client refuses a reply above its
// jute.maxbuffer, 1 MiB by default, about 40,000 names of 20 bytes).
//
// So the store keeps the record directory's names, sorted, with the
// directory's cversion (its count of child creations and deletions) as
// of before they were listed. A page reads the directory's stat (one
// small reply), reuses the names while the cversion has not moved, and
// finds its start by binary search: while no resource is created, a
// page costs its limit, whatever the number of records. The first page
// after a new resource relists the names, once, for every page after
// it. A registry that creates resources faster than it lists them pays
// the listing per page; a bucketed index of names, written by the
// commits beside the record, would bound that too, and is not built.

// recordNames is the record directory's names as last listed.
type recordNames struct {
	mu       sync.Mutex
	cversion int32    // the directory's cversion before the listing
	names    []string // resources, sorted; nil: never listed
	read     uint64   // names looked at by pages (RecordsRead)
}

// ScanRecords implements registry.Store: the record directory's names
// (recordNames) under prefix and after after are taken in name order up
// to limit, and read as one consistent view (readView), so every record
// listed is as it was at one revision. A record node without data (a
// placeholder a commit made before its multi failed) is not a record
// and is not listed.
func (s *Store) ScanRecords(ctx context.Context, prefix, after string, limit int) ([]registry.RecordSlot, error) {
	if limit <= 0 {
		return nil, nil
	}
	if err := s.sync(ctx); err != nil {
		return nil, fmt.Errorf("zkstore: scan records: %w", err)
	}
	resources, err := s.recordNamesNow(ctx)
	if err != nil {
		return nil, err
	}
	from, _ := slices.BinarySearch(resources, max(prefix, after))
	var picked, paths []string
	for _, r := range resources[from:] {
		if !strings.HasPrefix(r, prefix) || len(picked) == 2*limit {
			break
		}
		if r > after {
			picked = append(picked, r) // room for placeholders, which are rare
			paths = append(paths, s.recordPath(r))
		}
	}
	s.records.mu.Lock()
	s.records.read += uint64(len(picked))
	s.records.mu.Unlock()
	v, err := s.readView(ctx, paths, nil, false)
	if err != nil {
		return nil, fmt.Errorf("zkstore: scan records: %w", err)
	}
	out := make([]registry.RecordSlot, 0, min(len(picked), limit))
	for _, r := range picked {
		n := v.nodes[s.recordPath(r)]
		if n.modRev() == 0 {
			continue
		}
		rec, err := registry.DecodeRecord(n.data)
		if err != nil {
			return nil, fmt.Errorf("zkstore: %s: %w", r, err)
		}
		if out = append(out, registry.RecordSlot{Resource: r, Record: rec, ModRev: n.modRev()}); len(out) == limit {
			break
		}
	}
	return out, nil
}

// recordNamesNow is the record directory's names, sorted, listed again
// only when the directory's cversion moved since the last listing. The
// slice is shared: read it only.
func (s *Store) recordNamesNow(ctx context.Context) ([]string, error) {
	dir := s.root + recordDir
	st, err := call(ctx, func() (*zk.Stat, error) {
		_, st, err := s.c.Exists(dir)
		return st, err
	})
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return nil, fmt.Errorf("zkstore: scan records: stat %s: %w", dir, err)
	}
	if st == nil { // no record yet
		return nil, nil
	}
	c := &s.records
	c.mu.Lock()
	if c.names != nil && c.cversion == st.Cversion {
		defer c.mu.Unlock()
		return c.names, nil
	}
	c.mu.Unlock()
	names, err := s.children(ctx, dir)
	if err != nil {
		return nil, err
	}
	resources, err := keysOf(dir, names)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cversion, c.names = st.Cversion, resources // as of before the listing: a change since relists next time
	c.read += uint64(len(resources))
	return resources, nil
}

// RecordsRead is how many record names listing pages have looked at:
// the names a page picked, and every name each time the record
// directory was listed again (recordNames).
func (s *Store) RecordsRead() uint64 {
	s.records.mu.Lock()
	defer s.records.mu.Unlock()
	return s.records.read
}
