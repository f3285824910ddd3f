// Package zkstore is the registry.Store over ZooKeeper
// (github.com/go-zookeeper/zk): the second engine, for teams that run
// ZooKeeper already.
//
// # The tree
//
// Under a root (DefaultRoot unless told otherwise):
//
//	<root>/rev                          empty; every commit sets it, so its mzxid is the last commit's revision
//	<root>/settings                     the settings (registry.EncodeSettings); empty data: none yet
//	<root>/keyhistory                   the gate key history (registry.EncodeKeyHistory); empty data: none yet
//	<root>/r/<resource>                 one record per resource (registry.EncodeRecord); empty data: none yet
//	<root>/r/<resource>/id-<hash>       the record's marker: its contents' identity (identity.go)
//	<root>/q/<owner>/<bucket>/<request> one request entry (registry.EncodeRequestEntry)
//	<root>/s/<second>/<item>            one sweep index item, its resource the data (sweep.go)
//
// Each name is "=" followed by its key with every byte outside
// [A-Za-z0-9._~-] written %XX, so any resource, owner or request ID is one
// path component. bucket is two hex digits, the request ID's hash modulo
// Buckets: an owner's entries (kept the request retention, 16 min by
// default, up to 30 days) spread over up to
// Buckets nodes, so no listing nears ZooKeeper's 1 MiB reply limit
// (jute.maxbuffer) and an owner's concurrent requests rarely share one
// (a bucket is part of a compare's pin, below). A hash keeps no order: a
// scan merges an owner's buckets, and relists only those whose cversion
// moved since its previous page (scan.go). Values are the registry's
// codec, byte for byte what etcdstore stores.
//
// # Revisions
//
// The store's revision is ZooKeeper's zxid. An item's mod revision is its
// node's mzxid and its create revision the node's czxid; a ZooKeeper multi
// is one transaction with one zxid, so everything a commit writes shares
// it. Every commit's multi also sets <root>/rev, whose reply carries that
// zxid: the commit's revision. A node with empty data is an absent item
// (mod revision 0): the settings and key history nodes are made empty
// when the store is first opened, and a record is made empty by a commit that compares it
// as absent without writing it.
//
// # Compares (commit.go)
//
// ZooKeeper compares a node's data version, not its mzxid or contents. A
// commit reads every node it compares, decides the Write's compares on
// what it read (mod revisions, and RecordWas/SettingsWas byte for byte),
// and sends one multi that pins what it read: a check or a versioned set
// of each node seen present, a create of each node seen absent. The multi
// applies only if every pinned node is, at its zxid, the node the commit
// read: records and the settings are never deleted, so a data version
// names one modification of them; a request entry can be deleted and
// created again at the same version, so each deletion also sets the
// entry's bucket node, whose version the multi checks, and the bucket is
// read no later than the entry (or its pzxid shows no child created or
// deleted since the entry's mzxid). A multi that applies therefore commits
// on exactly the state the compares were decided on: it is linearizable
// at its zxid, in the ensemble's history. Two histories of the ensemble
// reuse data versions (a member serving a lost history: chaos seed 207),
// so each record also carries a marker named by its contents, which the
// multi deletes or checks (identity.go): a commit decided on a record of
// another history is refused by the leader, and reported. A multi
// refused by a pin (a node changed since it was read)
// applied nothing; the commit reads again (below) and either reports the
// failed compare or, when the compares still hold, sends a new multi, a
// bounded number of times. Any other error (connection lost, session
// expired, ctx ended with the multi sent) leaves the outcome unknown and
// is returned as such, never as a failed compare.
//
// What a pin cannot see is a restore of the ensemble from an older copy
// between a commit's read and its multi: the restored nodes may be back
// at the versions read, with other contents. That needs the restore to
// finish inside the commit's round trip: the client drops a request
// queued across a lost connection once it has tried every server, and
// ZooKeeper will not serve a session an older state than it has seen. A
// restore outside that window is caught (the commit reads the contents it
// compares; restore_test.go), and fences handed out again after any
// restore are the gate's regression rule's to catch.
//
// # Reads (read.go)
//
// Read syncs its server with the leader (ZooKeeper's sync), reads
// <root>/rev's mzxid R, then the nodes, then the parents of the nodes it
// found absent. Each node read is as it was at R when its mzxid is at most
// R (present) or its parent's pzxid is at most R (absent: no child created
// or deleted since). When every node passes, the snapshot is the state at
// revision R, which is at least every commit before the call (each sets
// rev); otherwise it reads again, a bounded number of times.
//
// # Group commit
//
// A multi is all or nothing, so independent writes cannot share one the
// way etcdstore nests transactions: one failed compare would fail the
// others. Every Commit is its own multi; commits in flight together are
// pipelined on the one session (the client sends without waiting for
// earlier replies), and ZooKeeper's transaction log groups their fsyncs.
//
// # Sessions
//
// The store holds no ephemeral nodes and no session state: a connection
// loss or session expiry fails the calls in flight (a commit's outcome is
// then unknown), later calls go to the new connection or session the
// client opens, and reads there stay linearizable because each syncs
// first. A lost session ends every open Watch's channel.
package zkstore

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
)

// DefaultRoot is where the registry's nodes live unless told otherwise.
const DefaultRoot = "/fencegate"

// Node names under the root.
const (
	revNode      = "/rev"
	settingsNode = "/settings"
	recordDir    = "/r"
	requestDir   = "/q"
)

// Buckets is how many bucket nodes an owner's request entries spread
// over, at most: a day of one busy owner's IDs per bucket stays far below
// the reply limit, and each owner costs at most this many empty nodes.
const Buckets = 64

// ErrOutcomeUnknown: a commit's multi was sent and no answer came back
// (connection lost, session expired, ctx ended); it may have applied.
var ErrOutcomeUnknown = errors.New("zkstore: commit outcome unknown")

// Store is a registry.Store over a ZooKeeper connection. Several
// registries (and several fencegate serve replicas) may share one
// ensemble and one root.
type Store struct {
	c    *zk.Conn
	root string
	acl  []zk.ACL
	form registry.StoredForm

	mu        sync.Mutex
	dirs      map[string]bool // request directories known to exist (never deleted)
	sweepDirs map[string]bool // sweep index buckets known to exist (sweep.go)
	listed    *listing        // the last owner ScanRequests listed
	records   recordNames     // the record directory's names (scanrecords.go)
	juteMax   int             // the ensemble's jute.maxbuffer (limits.go); 0: the default

	hist       history     // what this store has seen of the ensemble's history (history.go)
	onWentBack func(error) // WithWentBack

	// identityOff leaves out the records' markers (identity.go), as
	// before them: set only by tests, for their negative control.
	identityOff bool
}

var _ registry.Store = (*Store)(nil)

// Option sets a store's options at New.
type Option func(*Store)

// WithStoredForm sets the form the store writes records and request
// entries in (it reads every form). Optional, defaults to
// registry.FormCompact; FormJSON while replicas of a version before the
// compact form share the store (docs/operations.md, "Upgrading the
// stored form").
func WithStoredForm(f registry.StoredForm) Option { return func(s *Store) { s.form = f } }

// WithWentBack calls f with each registry.ErrStoreWentBack the store
// returns (history.go), for the operator's log: the call that saw it
// fails UNAVAILABLE at the client, which says little. Optional, defaults
// to none.
func WithWentBack(f func(error)) Option { return func(s *Store) { s.onWentBack = f } }

// New returns a store using c under root ("" means DefaultRoot), creating
// the root's nodes when missing. acl is given to every node the store
// creates (nil: zk.WorldACL(zk.PermAll); with digest auth, zk.AuthACL so
// only the authenticated user reads and writes). The caller keeps
// ownership of c.
func New(ctx context.Context, c *zk.Conn, root string, acl []zk.ACL, opts ...Option) (*Store, error) {
	if root == "" {
		root = DefaultRoot
	}
	if !strings.HasPrefix(root, "/") || (len(root) > 1 && strings.HasSuffix(root, "/")) {
		return nil, fmt.Errorf("zkstore: root %q: want an absolute path without a trailing slash", root)
	}
	if acl == nil {
		acl = zk.WorldACL(zk.PermAll)
	}
	s := &Store{c: c, root: strings.TrimSuffix(root, "/"), acl: acl, dirs: map[string]bool{}, sweepDirs: map[string]bool{}}
	for _, o := range opts {
		o(s)
	}
	if err := s.ensureBase(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// ensureBase creates the root, its parents, and the fixed nodes.
func (s *Store) ensureBase(ctx context.Context) error {
	parts := strings.Split(strings.TrimPrefix(s.root, "/"), "/")
	var paths []string
	for i := range parts {
		if parts[i] != "" {
			paths = append(paths, "/"+strings.Join(parts[:i+1], "/"))
		}
	}
	paths = append(paths, s.root+revNode, s.root+settingsNode, s.root+recordDir, s.root+requestDir, s.root+sweepDir, s.keyHistoryPath())
	for _, p := range paths {
		if err := s.create(ctx, p); err != nil {
			return fmt.Errorf("zkstore: create %s: %w", p, err)
		}
	}
	return nil
}

// create makes an empty node at p unless it exists.
func (s *Store) create(ctx context.Context, p string) error {
	return do(ctx, func() error {
		_, err := s.c.Create(p, nil, 0, s.acl)
		if errors.Is(err, zk.ErrNodeExists) {
			return nil
		}
		return err
	})
}

func (s *Store) revPath() string      { return s.root + revNode }
func (s *Store) settingsPath() string { return s.root + settingsNode }
func (s *Store) recordPath(resource string) string {
	return s.root + recordDir + "/" + nameOf(resource)
}

// ownerPath, bucketPath and requestPath place a request entry.
func (s *Store) ownerPath(owner string) string { return s.root + requestDir + "/" + nameOf(owner) }
func (s *Store) bucketPath(k lockstate.RequestKey) string {
	return s.ownerPath(k.Owner) + "/" + bucketOf(k.RequestID)
}
func (s *Store) requestPath(k lockstate.RequestKey) string {
	return s.bucketPath(k) + "/" + nameOf(k.RequestID)
}

// bucketOf names a request ID's bucket: its SHA-256's first byte modulo
// Buckets, in hex. Request IDs share prefixes ("req-…" from the SDK), so
// no prefix of them would spread.
func bucketOf(id string) string {
	sum := sha256.Sum256([]byte(id))
	return fmt.Sprintf("%02x", int(sum[0])%Buckets)
}

// ensureDirs creates the owner and bucket nodes of keys that are not
// known to exist. They are never deleted, so they are created once.
func (s *Store) ensureDirs(ctx context.Context, keys []lockstate.RequestKey) error {
	for _, k := range keys {
		for _, p := range []string{s.ownerPath(k.Owner), s.bucketPath(k)} {
			s.mu.Lock()
			known := s.dirs[p]
			s.mu.Unlock()
			if known {
				continue
			}
			if err := s.create(ctx, p); err != nil {
				return fmt.Errorf("zkstore: create %s: %w", p, err)
			}
			s.mu.Lock()
			s.dirs[p] = true
			s.mu.Unlock()
		}
	}
	return nil
}

// forgetDirs drops the known directories, after a multi found one gone
// (someone removed the tree under the store).
func (s *Store) forgetDirs() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.dirs)
	clear(s.sweepDirs)
}

// nameOf is key as one path component: "=" then the key, escaped.
func nameOf(key string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(1 + len(key))
	b.WriteByte('=')
	for i := 0; i < len(key); i++ {
		c := key[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '~' || c == '-' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// keyOf inverts nameOf; false for a name nameOf never makes.
func keyOf(name string) (string, bool) {
	if !strings.HasPrefix(name, "=") {
		return "", false
	}
	name = name[1:]
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		if name[i] != '%' {
			b.WriteByte(name[i])
			continue
		}
		if i+2 >= len(name) {
			return "", false
		}
		hi, ok1 := unhex(name[i+1])
		lo, ok2 := unhex(name[i+2])
		if !ok1 || !ok2 {
			return "", false
		}
		b.WriteByte(hi<<4 | lo)
		i += 2
	}
	return b.String(), true
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// do runs f, one blocking call of the ZooKeeper client, and returns its
// error, or ctx's once ctx ends first. f then finishes on its own (the
// client fails it at the latest when the connection is lost).
func do(ctx context.Context, f func() error) error {
	_, err := call(ctx, func() (struct{}, error) { return struct{}{}, f() })
	return err
}

// call is do for a call with a result, which it returns only when f ended
// first.
func call[T any](ctx context.Context, f func() (T, error)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	if ctx.Done() == nil {
		return f()
	}
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := f()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}
