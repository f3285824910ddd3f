package zkstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
)

// commitAttemptsMax bounds how many multis one Commit sends when a pin is
// refused while the Write's compares still hold (a node it only pinned,
// such as an entry it writes blind or a bucket, changed in between).
const commitAttemptsMax = 8

// ErrContended: every multi a commit sent was refused by a pin although
// the Write's compares held each time. Nothing was written.
var ErrContended = errors.New("zkstore: commit refused by concurrent changes")

// Commit implements registry.Store (the package doc argues why it is
// linearizable): read the nodes, decide the compares, one multi pinning
// what was read. A refused multi applied nothing and is decided again on
// a synced, consistent read.
//
// Like Read, it returns registry.ErrStoreWentBack, before deciding, when
// what it read is older than what this Store saw before, and after a
// multi whose revision shows the same (the multi applied, to the state the
// ensemble holds now).
func (s *Store) Commit(ctx context.Context, w registry.Write) (registry.CommitResult, error) {
	if err := checkWrite(w); err != nil {
		return registry.CommitResult{}, err
	}
	base := s.hist.before(s, append(s.commitPaths(w, w.ReadKeys), s.revPath()))
	v, err := s.look(ctx, w)
	if err == nil && v != nil {
		err = s.hist.after(s, base, v.nodes)
	}
	if err != nil {
		return registry.CommitResult{}, fmt.Errorf("zkstore: commit: read: %w", err)
	}
	old := map[string]*unmarked{} // records seen without their marker, by path (identity.go)
	for range commitAttemptsMax {
		if v == nil || !s.holds(w, v) {
			// The quick look may lag the leader: decide on a synced read.
			v, err = s.readView(ctx, s.commitPaths(w, w.ReadKeys), s.guarded(w), true)
			if err == nil {
				err = s.hist.after(s, base, v.nodes)
			}
			if err != nil {
				return registry.CommitResult{}, fmt.Errorf("zkstore: commit: read: %w", err)
			}
			if !s.holds(w, v) {
				cur, err := s.snapshotOf(v, w.Resource, w.ReadKeys)
				if err == nil && len(w.Members) > 0 {
					err = s.membersOf(v, memberNames(w), &cur)
				}
				return registry.CommitResult{Current: cur}, err
			}
		}
		if err := s.ensureDirs(ctx, writtenKeys(w)); err != nil {
			return registry.CommitResult{}, err
		}
		sweeps, err := s.sweepOps(ctx, w)
		if err != nil {
			return registry.CommitResult{}, err
		}
		ops, markers := s.ops(w, v, old)
		rev, refused, err := s.multi(ctx, withSweeps(ops, sweeps))
		switch {
		case err != nil:
			return registry.CommitResult{}, err
		case refused == nil:
			if err := s.hist.after(s, base, map[string]node{s.revPath(): rev}); err != nil {
				return registry.CommitResult{}, fmt.Errorf("%w: %w", ErrOutcomeUnknown, err)
			}
			return registry.CommitResult{OK: true, Revision: uint64(rev.stat.Mzxid)}, nil
		case markers[refused.at] != "" && errors.Is(refused.err, zk.ErrNoNode) && isMarkerOp(ops[refused.at]):
			// A record's version held and its identity did not.
			p := markers[refused.at]
			if old[p], err = s.recordIdentity(ctx, p, v.nodes[p]); err != nil {
				return registry.CommitResult{}, fmt.Errorf("zkstore: commit: %w", err)
			}
			if old[p] != nil {
				if err := s.unmarkedBeside(ctx, w, v, p, old); err != nil {
					return registry.CommitResult{}, fmt.Errorf("zkstore: commit: %w", err)
				}
			}
		}
		v = nil
	}
	return registry.CommitResult{}, fmt.Errorf("%w after %d multis", ErrContended, commitAttemptsMax)
}

// checkWrite rejects what no store can apply: a record without a
// resource, or one request key written twice.
func checkWrite(w registry.Write) error {
	if (w.Record != nil || w.RecordWas != nil) && w.Resource == "" {
		return fmt.Errorf("zkstore: record write without a resource")
	}
	if err := registry.CheckMembers(w); err != nil {
		return fmt.Errorf("zkstore: commit: %w", err)
	}
	seen := make(map[lockstate.RequestKey]bool, len(w.Requests))
	for _, rw := range w.Requests {
		if seen[rw.Key] {
			return fmt.Errorf("zkstore: request %s/%s written twice in one commit", rw.Key.Owner, rw.Key.RequestID)
		}
		seen[rw.Key] = true
	}
	items := make(map[registry.SweepItem]bool, len(w.Sweeps))
	for _, sw := range w.Sweeps {
		it := registry.SweepItem{AtMs: sw.Item.AtMs, Key: sw.Item.Key}
		if items[it] {
			return fmt.Errorf("zkstore: sweep item %d %s/%s written twice in one commit", it.AtMs, it.Key.Owner, it.Key.RequestID)
		}
		items[it] = true
	}
	return nil
}

// memberNames lists a set write's members, in its order.
func memberNames(w registry.Write) []string {
	names := make([]string, len(w.Members))
	for i, m := range w.Members {
		names[i] = m.Resource
	}
	return names
}

func writtenKeys(w registry.Write) []lockstate.RequestKey {
	keys := make([]lockstate.RequestKey, len(w.Requests))
	for i, rw := range w.Requests {
		keys[i] = rw.Key
	}
	return keys
}

// commitPaths are the nodes a commit of w reads: its record (or its
// members'), the settings, its entries and extra (the keys a failed
// compare returns).
func (s *Store) commitPaths(w registry.Write, extra []lockstate.RequestKey) []string {
	return s.setPaths(w.Resource, memberNames(w), append(writtenKeys(w), extra...))
}

// guarded are the entries w compares: their pins are only sound with
// their bucket read no later than them (the package doc).
func (s *Store) guarded(w registry.Write) map[string]bool {
	g := map[string]bool{}
	for _, rw := range w.Requests {
		if rw.Compare {
			g[s.requestPath(rw.Key)] = true
		}
	}
	return g
}

// look is a commit's quick read: its nodes and the buckets of the entries
// it compares, in one round trip, without a sync. It returns nil when a
// compared entry's bucket had a child created or deleted after the
// entry's mzxid (its pin would not be sound; a synced read decides).
func (s *Store) look(ctx context.Context, w registry.Write) (*view, error) {
	paths := append(s.commitPaths(w, nil), s.revPath()) // the revision node for history.go
	g := s.guarded(w)
	for p := range g {
		paths = append(paths, path.Dir(p))
	}
	v := &view{nodes: make(map[string]node, len(paths))}
	if err := s.getAll(ctx, paths, v.nodes); err != nil {
		return nil, err
	}
	for p := range g {
		n, dir := v.nodes[p], v.nodes[path.Dir(p)]
		if n.ok && dir.ok && dir.stat.Pzxid > n.stat.Mzxid {
			return nil, nil
		}
	}
	return v, nil
}

// holds decides w's compares on v.
func (s *Store) holds(w registry.Write, v *view) bool {
	// Contents, where the write names them, instead of revisions
	// (registry.Write), as etcdstore compares.
	if w.Resource != "" && !recordHolds(v.nodes[s.recordPath(w.Resource)], w.RecordRev, w.RecordWas, w.RecordWasRaw) {
		return false
	}
	for _, m := range w.Members {
		if !recordHolds(v.nodes[s.recordPath(m.Resource)], m.RecordRev, m.RecordWas, m.RecordWasRaw) {
			return false
		}
	}
	n := v.nodes[s.settingsPath()]
	if w.SettingsWas != nil {
		if n.modRev() == 0 || !bytes.Equal(n.data, registry.EncodeSettings(w.SettingsWas)) {
			return false
		}
	} else if n.modRev() != w.SettingsRev {
		return false
	}
	for _, rw := range w.Requests {
		if rw.Compare && v.nodes[s.requestPath(rw.Key)].modRev() != rw.ModRev {
			return false
		}
	}
	return true
}

// recordHolds decides one record's compare on its node n: its contents
// when was is named, else its mod revision (0: absent).
func recordHolds(n node, rev uint64, was *lockstate.Record, wasRaw []byte) bool {
	if was != nil {
		return n.modRev() != 0 && registry.StoredRecordIs(n.data, was, wasRaw)
	}
	return n.modRev() == rev
}

// ops is w as one multi pinning v: the record, or each member's, with its
// identity (recordOps) and the settings (a check or versioned set when
// present, a create when missing), the buckets of the
// compared entries present, then each entry's write, then <root>/rev,
// whose reply carries the commit's zxid. markers names, by its index in
// ops, each op that pins a record's identity, with the record's path.
func (s *Store) ops(w registry.Write, v *view, old map[string]*unmarked) (ops []any, markers map[int]string) {
	markers = map[int]string{}
	record := func(resource string, rec *lockstate.Record) {
		var data []byte
		if rec != nil {
			data = s.form.EncodeRecord(rec)
		}
		p := s.recordPath(resource)
		if ros := s.recordOps(p, v.nodes[p], data, rec != nil, old[p]); len(ros) > 1 {
			markers[len(ops)+identityOpAt] = p
			ops = append(ops, ros...)
		} else {
			ops = append(ops, ros...)
		}
	}
	if w.Resource != "" {
		record(w.Resource, w.Record)
	}
	for _, m := range w.Members {
		record(m.Resource, m.Record)
	}
	var data []byte
	if w.Settings != nil {
		data = registry.EncodeSettings(w.Settings)
	}
	ops = append(ops, pin(s.settingsPath(), v.nodes[s.settingsPath()], data, w.Settings != nil, s.acl))
	for _, rw := range w.Requests {
		p := s.requestPath(rw.Key)
		if dir := v.nodes[path.Dir(p)]; rw.Compare && v.nodes[p].ok {
			ops = append(ops, &zk.CheckVersionRequest{Path: path.Dir(p), Version: dir.stat.Version})
		}
	}
	for _, rw := range w.Requests {
		ops = append(ops, s.entryOps(rw, v.nodes[s.requestPath(rw.Key)])...)
	}
	return append(ops, &zk.SetDataRequest{Path: s.revPath(), Version: -1}), markers
}

// pin writes data over n when write is set, or only checks it: at n's
// version when present, as a create (of an empty node when not writing)
// when missing.
func pin(p string, n node, data []byte, write bool, acl []zk.ACL) any {
	switch {
	case !n.ok:
		return &zk.CreateRequest{Path: p, Data: data, Acl: acl}
	case write:
		return &zk.SetDataRequest{Path: p, Data: data, Version: n.stat.Version}
	default:
		return &zk.CheckVersionRequest{Path: p, Version: n.stat.Version}
	}
}

// entryOps writes one request entry: compared entries at the version read,
// others blind (version -1). A delete also sets the bucket (the guard of
// the package doc). An absent entry that is not written is pinned absent
// by creating and deleting it in the same multi.
func (s *Store) entryOps(rw registry.RequestWrite, n node) []any {
	p := s.requestPath(rw.Key)
	version := int32(-1)
	if rw.Compare {
		version = n.stat.Version
	}
	switch {
	case !n.ok && rw.Entry != nil:
		return []any{&zk.CreateRequest{Path: p, Data: s.form.EncodeRequestEntry(rw.Entry), Acl: s.acl}}
	case !n.ok:
		return []any{&zk.CreateRequest{Path: p, Acl: s.acl}, &zk.DeleteRequest{Path: p, Version: 0}}
	case rw.Entry != nil:
		return []any{&zk.SetDataRequest{Path: p, Data: s.form.EncodeRequestEntry(rw.Entry), Version: version}}
	default:
		return []any{&zk.DeleteRequest{Path: p, Version: version}, &zk.SetDataRequest{Path: path.Dir(p), Version: -1}}
	}
}

// refusal is the op of a multi ZooKeeper refused because a pin failed:
// its index in the multi and its error (nothing applied).
type refusal struct {
	at  int
	err error
}

// multi sends ops. It returns <root>/rev as the multi set it (its mzxid is
// the commit's revision), or the refusal when ZooKeeper answered that a
// pin failed (nothing applied), or an error: ErrOutcomeUnknown when the
// multi was sent and no answer says whether it applied.
func (s *Store) multi(ctx context.Context, ops []any) (rev node, refused *refusal, err error) {
	if err := ctx.Err(); err != nil {
		return node{}, nil, fmt.Errorf("zkstore: commit: not sent: %w", err)
	}
	if err := s.checkRequestSize(ops); err != nil { // limits.go
		return node{}, nil, err
	}
	res, err := call(ctx, func() ([]zk.MultiResponse, error) { return s.c.Multi(ops...) })
	switch {
	case err == nil && len(res) == len(ops) && res[len(res)-1].Stat != nil:
		return node{ok: true, stat: *res[len(res)-1].Stat}, nil, nil
	case err == nil:
		return node{}, nil, fmt.Errorf("%w: applied, but the reply has %d results for %d operations", ErrOutcomeUnknown, len(res), len(ops))
	case ctx.Err() != nil:
		return node{}, nil, fmt.Errorf("%w: %w", ErrOutcomeUnknown, err)
	case len(res) == len(ops) && pinFailed(err):
		if errors.Is(err, zk.ErrNoNode) {
			s.forgetDirs() // a directory may be gone: recreate before the next try
		}
		// The ops before the refused one answer no error, those after it
		// a runtime inconsistency.
		r := &refusal{at: -1, err: err}
		for i, op := range res {
			if op.Error != nil {
				r.at, r.err = i, op.Error
				break
			}
		}
		return node{}, r, nil
	case len(res) == len(ops):
		// Refused for another reason (no permission, a bad path): nothing
		// applied, and trying again will not help.
		return node{}, nil, fmt.Errorf("zkstore: commit: refused: %w", err)
	}
	return node{}, nil, fmt.Errorf("%w: %w", ErrOutcomeUnknown, err)
}

// isMarkerOp reports whether op pins a record's existing marker (a
// delete or check of it, identity.go).
func isMarkerOp(op any) bool {
	switch o := op.(type) {
	case *zk.DeleteRequest:
		return strings.HasPrefix(path.Base(o.Path), markPrefix)
	case *zk.CheckVersionRequest:
		return strings.HasPrefix(path.Base(o.Path), markPrefix)
	}
	return false
}

// pinFailed reports a multi refused because a node was not as read.
func pinFailed(err error) bool {
	return errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrNodeExists) || errors.Is(err, zk.ErrNotEmpty)
}
