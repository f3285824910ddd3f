package zkstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/go-zookeeper/zk"

	"github.com/fencegate/fencegate/registry"
)

// A record's identity (chaos seed 207, registry/zkstore/snapshotfork_test.go).
//
// ZooKeeper's multi compares a node's data version, and two histories of
// an ensemble reuse data versions: ZooKeeper 3.8.0 lets a member the new
// leader truncated reload a snapshot taken beyond the truncation and
// serve, in the new epoch, records the ensemble lost, at versions the
// ensemble's own history reaches again with other contents. A commit
// decided on such a record passed the leader's version check. So each
// record carries, as a child node, a marker named by its contents
// (markName): every multi that writes the record deletes its
// predecessor's marker and creates its own, and a multi that only pins
// it checks its marker exists (ZooKeeper's delete and check at version
// -1 fail on an absent node). The leader then applies a commit only on
// the record the commit read, contents included: a record of another
// history at the same version has other contents, so another marker,
// and the multi is refused. Two histories holding the same contents at
// the same version decided the same thing. The marker costs no read:
// the commit names it from the record it read.
//
// A refusal on the marker while the record's version pin held has two
// causes (recordIdentity tells them apart on a synced read of the
// record and its children): the member serves a record the ensemble
// does not hold (its own marker is there: registry.ErrStoreWentBack), or
// the record was written without markers, by a version before them
// (no marker of its contents: the next multi pins it by version only,
// as before, and gives it its marker).

// markPrefix begins every marker's name; record nodes have no other
// children.
const markPrefix = "id-"

// markName is the marker of a record node holding data: the first 128
// bits of its SHA-256, in hex.
func markName(data []byte) string {
	sum := sha256.Sum256(data)
	return markPrefix + hex.EncodeToString(sum[:16])
}

// unmarked is a record node seen without the marker of its contents, as
// it was (mzxid) when its children were listed.
type unmarked struct {
	path     string
	mzxid    int64
	children []string
}

// recordOps pins the record node at p as n (read by the commit) and
// writes data over it when write is set, with its identity: the marker
// ops follow the record's own (identityOpAt). old, when not nil and
// still the node read, is that node without a marker of its contents:
// its stray children are deleted and it is pinned by version only.
func (s *Store) recordOps(p string, n node, data []byte, write bool, old *unmarked) []any {
	ops := []any{pin(p, n, data, write, s.acl)}
	if s.identityOff {
		return ops
	}
	if !write {
		data = n.data
	}
	switch {
	case !n.ok:
		return append(ops, &zk.CreateRequest{Path: p + "/" + markName(data), Acl: s.acl})
	case old != nil && old.path == p && old.mzxid == n.stat.Mzxid:
		for _, c := range old.children {
			ops = append(ops, &zk.DeleteRequest{Path: p + "/" + c, Version: -1})
		}
		return append(ops, &zk.CreateRequest{Path: p + "/" + markName(data), Acl: s.acl})
	case write:
		return append(ops,
			&zk.DeleteRequest{Path: p + "/" + markName(n.data), Version: -1},
			&zk.CreateRequest{Path: p + "/" + markName(data), Acl: s.acl})
	default:
		return append(ops, &zk.CheckVersionRequest{Path: p + "/" + markName(n.data), Version: -1})
	}
}

// identityOpAt is the index, among a record's ops (recordOps), of the op
// that pins the record's identity (after the record's own pin).
const identityOpAt = 1

// recordIdentity explains a multi the leader refused on the record's
// marker while the record's version pin held (n: the record as the
// commit read it). It syncs and lists the record's children on the
// session's member: nil, nil when the record has moved on since (decide
// again); an unmarked when the member holds no marker of the record's
// contents (written before markers: pin it by version next); an error
// wrapping registry.ErrStoreWentBack when the member holds the marker
// the leader does not: the member serves a record of a history the
// ensemble lost. The lost record's zxid is remembered (history.lost), so
// reads of it fail too.
func (s *Store) recordIdentity(ctx context.Context, p string, n node) (*unmarked, error) {
	return s.identityOf(ctx, p, n, true)
}

// unmarkedBeside looks, after the leader refused one member's marker, at
// the identity of the set write's other members not yet known unmarked
// (old): a set over records written before markers (a rolling upgrade)
// would otherwise learn one member per multi and run out of attempts
// (commitAttemptsMax) before it committed. A member that holds its
// marker is left as it is: only the leader's refusal says anything
// about it.
func (s *Store) unmarkedBeside(ctx context.Context, w registry.Write, v *view, refused string, old map[string]*unmarked) error {
	for _, m := range w.Members {
		p := s.recordPath(m.Resource)
		if n := v.nodes[p]; p == refused || old[p] != nil || !n.ok {
			continue
		}
		u, err := s.identityOf(ctx, p, v.nodes[p], false)
		if err != nil {
			return err
		}
		if u != nil {
			old[p] = u
		}
	}
	return nil
}

// identityOf is recordIdentity; when refused is false (the leader said
// nothing about p's marker), a marker found is nothing learned (nil,
// nil), not a history lost.
func (s *Store) identityOf(ctx context.Context, p string, n node, refused bool) (*unmarked, error) {
	if err := s.sync(ctx); err != nil {
		return nil, err
	}
	type listed struct {
		names []string
		stat  *zk.Stat
	}
	l, err := call(ctx, func() (listed, error) {
		names, st, err := s.c.Children(p)
		return listed{names, st}, err
	})
	if err != nil {
		return nil, fmt.Errorf("children of %s: %w", p, err)
	}
	if l.stat.Mzxid != n.stat.Mzxid || l.stat.Version != n.stat.Version {
		return nil, nil
	}
	if !slices.Contains(l.names, markName(n.data)) {
		return &unmarked{path: p, mzxid: n.stat.Mzxid, children: l.names}, nil
	}
	if !refused {
		return nil, nil
	}
	s.hist.lose(n.stat.Mzxid)
	err = fmt.Errorf("%w: %s: %s as this member serves it, with its marker %s, which the ensemble's leader does not hold: the member serves a record of a history the ensemble lost (ZooKeeper reloaded a snapshot beyond its truncation); nothing was written",
		registry.ErrStoreWentBack, p, describe(n), markName(n.data))
	if s.onWentBack != nil {
		s.onWentBack(err)
	}
	return nil, err
}
