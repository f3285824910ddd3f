package zkstore

import (
	"fmt"
	"strings"
	"sync"

	"github.com/fencegate/fencegate/registry"
)

// historyNodesMax bounds the nodes a Store remembers (the revision node,
// the settings and records, 64 Ki): past it, the records' are forgotten
// and remembered again as they are read, so a registry of many resources
// costs a few MiB at most, and loses only the records' part of the check
// for a moment.
const historyNodesMax = 1 << 16

// lostZxidsMax bounds the zxids a Store remembers as lost (history.lost):
// each went-back finding adds one per node; past the bound the set starts
// over, losing only the check of nodes a long-gone fork wrote.
const lostZxidsMax = 1 << 10

// history is what a Store has seen of the ensemble's history, to tell
// when the ensemble went back (registry.ErrStoreWentBack): for each node
// no commit deletes (<root>/rev, the settings, the records), the highest
// data version it read or wrote, and that version's mzxid.
//
// In one history of the ensemble a node's data version and its mzxid rise
// together (each set adds one to the version and takes its transaction's
// zxid), and a session never reads a state older than one it has seen,
// synced or not. So a node read later at a lower version, at the same
// version with another mzxid, at a higher version with an mzxid not
// higher, or absent after it was present, was read in another history:
// the ensemble lost transactions it had acknowledged (ZooKeeper 3.8.0
// elected a member that had not logged them: docs/guarantees.md, "On
// ZooKeeper") or was restored from a copy. The revision node is set by
// every commit, so any lost commit this Store saw shows there until as
// many new commits have passed it; the records keep the check for longer
// on the resources this Store reads.
//
// A call compares what it reads only with what calls that had ended when
// it began saw (before), so concurrent calls never judge each other.
//
// A member can also go on serving a lost transaction after the ensemble
// moved on without it: ZooKeeper 3.8.0 truncates a member's log to the
// new leader's history but reloads a snapshot taken beyond that point
// (chaos seed 207: zk3 truncated to 0x200000002, loaded
// snapshot.200000004 and followed epoch 3 with 0x200000003 applied).
// Every node that transaction wrote and no later one did stays on that
// member as the lost history left it, at a data version the leader's
// history reaches again with other contents, so a compare-and-swap
// decided on it passes the leader's version check. So the zxid a
// went-back node was seen at, which no transaction of the ensemble's
// history has, is remembered (lost), and any node read later with that
// zxid as its mzxid, czxid or pzxid was read from the lost history too:
// the read or commit fails with registry.ErrStoreWentBack before
// deciding on it.
type history struct {
	mu   sync.Mutex
	seen map[string]seenNode
	lost map[int64]bool // zxids of transactions the ensemble lost
}

// seenNode is one node's highest version seen, with its mzxid.
type seenNode struct {
	version int32
	mzxid   int64
}

// kept reports whether p is a node no commit deletes.
func (s *Store) kept(p string) bool {
	return p == s.revPath() || p == s.settingsPath() || strings.HasPrefix(p, s.root+recordDir+"/")
}

// before returns what was seen of the kept nodes among paths, as a call
// reading them begins.
func (h *history) before(s *Store, paths []string) map[string]seenNode {
	h.mu.Lock()
	defer h.mu.Unlock()
	base := make(map[string]seenNode, len(paths))
	for _, p := range paths {
		if sn, ok := h.seen[p]; ok && s.kept(p) {
			base[p] = sn
		}
	}
	return base
}

// after compares the kept nodes a call read with base, remembers them,
// and returns an error wrapping registry.ErrStoreWentBack naming the
// first node (in path order) that went back. A node that went back is
// remembered as read: later calls serve the history the ensemble holds
// now.
func (h *history) after(s *Store, base map[string]seenNode, nodes map[string]node) error {
	err := h.compare(s, base, nodes)
	if err != nil && s.onWentBack != nil {
		s.onWentBack(err)
	}
	return err
}

// compare is after, under the lock.
func (h *history) compare(s *Store, base map[string]seenNode, nodes map[string]node) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.seen == nil || len(h.seen) > historyNodesMax {
		h.forgetRecords(s)
	}
	if rev := nodes[s.revPath()]; rev.ok {
		h.reached(rev.stat.Mzxid)
	}
	var back []string
	for p, n := range nodes {
		if z, ok := h.wroteLost(n); ok {
			// Not remembered as seen: it is not the ensemble's history.
			back = append(back, fmt.Sprintf("%s: %s, written by transaction %#x, which the ensemble lost", p, describe(n), z))
			continue
		}
		if !s.kept(p) {
			continue
		}
		if was, ok := base[p]; ok && wentBack(was, n) {
			back = append(back, fmt.Sprintf("%s: %s after %s", p, describe(n), describeSeen(was)))
			h.remember(was.mzxid)
		}
		cur, ok := h.seen[p]
		switch {
		case !n.ok:
			delete(h.seen, p)
		case !ok || newer(cur, n) || wentBack(cur, n):
			h.seen[p] = seenNode{version: n.stat.Version, mzxid: n.stat.Mzxid}
		}
	}
	if len(back) == 0 {
		return nil
	}
	first := back[0]
	for _, b := range back[1:] {
		first = min(first, b)
	}
	return fmt.Errorf("%w: %s (%d nodes): ZooKeeper lost transactions it had acknowledged, or was restored; fences issued since may be issued again (gates pause on them), and a fence-range bump moves the next ones above",
		registry.ErrStoreWentBack, first, len(back))
}

// remember records z as the zxid of a transaction the ensemble lost.
func (h *history) remember(z int64) {
	if z == 0 {
		return
	}
	if h.lost == nil || len(h.lost) >= lostZxidsMax {
		h.lost = map[int64]bool{}
	}
	h.lost[z] = true
}

// lose records z as lost, as remember does, for a caller outside the
// lock.
func (h *history) lose(z int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.remember(z)
}

// reached forgets the lost zxids of rev's epoch up to rev: the history
// read ran that epoch past them, so it ran the epoch again (a restored
// copy, a standalone server started on one) and a node at one of them is
// its own. The zxids of another epoch stay lost: an ensemble runs each
// epoch once, a restore aside.
func (h *history) reached(rev int64) {
	for z := range h.lost {
		if z>>32 == rev>>32 && z <= rev {
			delete(h.lost, z)
		}
	}
}

// wroteLost reports whether n carries the zxid of a lost transaction: it
// was read from a member that applied it.
func (h *history) wroteLost(n node) (int64, bool) {
	if !n.ok {
		return 0, false
	}
	for _, z := range []int64{n.stat.Mzxid, n.stat.Czxid, n.stat.Pzxid} {
		if h.lost[z] {
			return z, true
		}
	}
	return 0, false
}

// forgetRecords keeps only the revision node and the settings.
func (h *history) forgetRecords(s *Store) {
	kept := make(map[string]seenNode, 2)
	for _, p := range []string{s.revPath(), s.settingsPath()} {
		if sn, ok := h.seen[p]; ok {
			kept[p] = sn
		}
	}
	h.seen = kept
}

// versionAfter is a's version minus b's in serial arithmetic: a data
// version is an int32 that wraps, and two versions seen by one Store are
// far less than 2^31 sets apart.
func versionAfter(a, b int32) int32 { return int32(uint32(a) - uint32(b)) }

// newer reports whether n is a later state of the node seen as was, in
// the same history.
func newer(was seenNode, n node) bool {
	return n.ok && versionAfter(n.stat.Version, was.version) > 0 && n.stat.Mzxid > was.mzxid
}

// wentBack reports whether n, read after the node was seen as was, was
// read in another history (the type's doc).
func wentBack(was seenNode, n node) bool {
	if !n.ok {
		return true
	}
	switch d := versionAfter(n.stat.Version, was.version); {
	case d < 0:
		return true
	case d == 0:
		return n.stat.Mzxid != was.mzxid
	default:
		return n.stat.Mzxid <= was.mzxid
	}
}

func describe(n node) string {
	if !n.ok {
		return "absent"
	}
	return fmt.Sprintf("version %d (mzxid %#x)", n.stat.Version, n.stat.Mzxid)
}

func describeSeen(sn seenNode) string {
	return fmt.Sprintf("version %d (mzxid %#x) was seen", sn.version, sn.mzxid)
}
