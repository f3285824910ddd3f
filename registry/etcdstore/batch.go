package etcdstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/fencegate/fencegate/internal/batch"
	"github.com/fencegate/fencegate/registry"
)

// Group commit. Commits that arrive while BatchInflightMax transactions
// are already in flight wait in a queue; the next free slot sends the
// queue's head and every queued write whose keys it does not share, up to
// BatchWritesMax, as one etcd transaction with one nested transaction per
// write. etcd evaluates every nested transaction's compares against the
// state before the whole transaction and applies each one's then or else
// branch alone, so each write still succeeds or fails by its own compares
// (a failed one reads its fresh snapshot in its else branch, as a lone
// commit does) and no write waits for a retry of another. Where every
// write in the group expects the same settings (the rule: settings move
// only by an operator), the group compares them once, in the enclosing
// transaction, and reads them once for every member's snapshot; should
// they have moved, nothing applies and the group goes again with each
// write's own compare. Writes in one
// transaction touch disjoint keys (settings are only compared), so the
// outcome is that of running them one after another in any order; they
// share one revision, which is each one's commit revision. A commit that
// finds a free slot goes at once: grouping costs nothing when idle.
//
// Commits of this store that share a key are sent in the order they
// arrived, each once the one before has its outcome (batcher.after; the
// later one waits in the queue, and goes with the next group): two
// transactions in flight reach etcd's log in either order, so a write
// decided on a record whose own commit is still in flight (a release
// answered early, then an acquire of the same resource decided on the
// released record) would otherwise fail its compare whenever it overtook
// that commit, and its caller decide again on a fresh read: 4-5% of the
// writes at 64 resources on two cores, each a wasted commit, a read and a
// backoff. Writes of different keys never wait for each other.

// Options tunes a Store.
type Options struct {
	// BatchWritesMax is how many commits one etcd transaction carries.
	// Optional, defaults to 32; 1 sends every commit alone. etcd's default
	// --max-txn-ops of 128 must cover it plus one write's operations.
	BatchWritesMax int
	// BatchInflightMax is how many transactions are in flight before
	// commits queue for the next. Optional, defaults to 2: etcd appends a
	// transaction to its log while it applies the one before, so a second
	// in flight overlaps the two where one alone leaves the queue waiting
	// a whole round trip (at 64 resources about 1.2x the cycles per
	// second of one in flight, docs/performance.md); a queued commit waits
	// at most one round trip either way.
	BatchInflightMax int
	// TxnOpsMax is the cluster's --max-txn-ops: the most operations etcd
	// takes in one branch of a transaction, a group's nested ones counted
	// against what the group leaves (etcd's checkTxnRequest). Optional,
	// defaults to TxnOpsMaxDefault, etcd's default (and the embedded
	// member's). A write that cannot fit is refused unsent (wrapping
	// registry.ErrTooLarge: a lock set of many members with many request
	// entries); a group takes a write only where the group still fits.
	TxnOpsMax int
	// Form is how the store writes records and request entries; it reads
	// every form. Optional, defaults to registry.FormCompact; FormJSON
	// while replicas of a version before the compact form share the store
	// (docs/operations.md, "Upgrading the stored form").
	Form registry.StoredForm

	kv pb.KVClient // Embedded.InProcess's; nil: the client's connection
}

// WithStoredForm sets the form the store writes records and request
// entries in.
func WithStoredForm(f registry.StoredForm) Option {
	return func(o *Options) { o.Form = f }
}

// Option sets Options at New.
type Option func(*Options)

// WithBatching sets how many commits one transaction carries (1: none) and
// how many transactions are in flight before commits queue; 0 keeps a
// default.
func WithBatching(writesMax, inflightMax int) Option {
	return func(o *Options) { o.BatchWritesMax, o.BatchInflightMax = writesMax, inflightMax }
}

// batchBytesMax bounds a grouped transaction's values, well under etcd's
// default 1.5 MiB request limit.
const batchBytesMax = 512 << 10

// TxnOpsMaxDefault is etcd's default --max-txn-ops.
const TxnOpsMaxDefault = 128

// WithTxnOpsMax tells the store the cluster's --max-txn-ops (Options
// TxnOpsMax), where it is not etcd's default.
func WithTxnOpsMax(n int) Option {
	return func(o *Options) { o.TxnOpsMax = n }
}

func (o Options) withDefaults() Options {
	if o.TxnOpsMax <= 0 {
		o.TxnOpsMax = TxnOpsMaxDefault
	}
	if o.BatchWritesMax <= 0 {
		o.BatchWritesMax = 32
	}
	if o.BatchInflightMax <= 0 {
		o.BatchInflightMax = 2
	}
	return o
}

// batcher groups commits (internal/batch: the slots, the queue and the
// hand-off the SDK's HTTP batching shares).
type batcher struct {
	s   *Store
	opt Options
	q   batch.Queue[*pending]

	txns, writes atomic.Uint64 // transactions sent and writes they carried
	failed       atomic.Uint64 // writes whose compares failed (the caller decides again)

	mu   sync.Mutex
	last map[string]*pending // key → the latest commit naming it that has no outcome yet
}

// pending is one queued commit.
type pending struct {
	w    registry.Write
	t    writeTxn
	keys []string // every key it compares, writes or reads, but settings
	size int
	ctx  context.Context
	done chan struct{} // closed once res and err are set
	out  chan struct{} // closed once its commit returned (batcher.forget)

	before []*pending // earlier commits of its keys: it is sent after their outcomes (ready)
	res    registry.CommitResult
	err    error
}

func newBatcher(s *Store, o Options) *batcher {
	b := &batcher{s: s, opt: o, last: map[string]*pending{}}
	b.q = batch.Queue[*pending]{InflightMax: o.BatchInflightMax, Group: b.group, Send: b.send, Ready: ready}
	return b
}

// commit sends w at once when a slot is free (its own write first in the
// group), else queues it, and waits for its outcome.
func (b *batcher) commit(ctx context.Context, w registry.Write) (registry.CommitResult, error) {
	p := b.s.newPending(ctx, w)
	if err := b.s.fits(&p.t); err != nil {
		return registry.CommitResult{}, err
	}
	p.before = b.after(p)
	defer b.forget(p)
	switch sent, err := b.q.Do(ctx, p, p.done); {
	case err == nil:
		return p.res, p.err
	case !sent:
		return registry.CommitResult{}, fmt.Errorf("etcdstore: commit: not sent: %w", err)
	default:
		return registry.CommitResult{}, fmt.Errorf("etcdstore: commit: outcome unknown: %w", err)
	}
}

// after names p the latest commit of its keys and returns the commits
// before it, of any of its keys, that have no outcome yet: p is sent once
// they have theirs.
func (b *batcher) after(p *pending) []*pending {
	b.mu.Lock()
	defer b.mu.Unlock()
	var before []*pending
	for _, k := range p.keys {
		if q := b.last[k]; q != nil && q != p && !slices.Contains(before, q) {
			before = append(before, q)
		}
		b.last[k] = p
	}
	return before
}

// forget drops p from the keys it is still the latest commit of, and
// lets the commits after it go: its commit returned (with an outcome, or
// its caller gave up on it). A commit that waited for p's outcome is
// taken by the slot that sent p as it frees, with the rest of the queue
// (p's outcome is delivered before that slot takes the queue); the kick
// is for one that waited for a p whose caller gave up before its outcome.
func (b *batcher) forget(p *pending) {
	b.mu.Lock()
	waited := false
	for _, k := range p.keys {
		if b.last[k] == p {
			delete(b.last, k)
		} else {
			waited = true // a later commit of k was made meanwhile
		}
	}
	b.mu.Unlock()
	close(p.out)
	select {
	case <-p.done:
	default:
		if waited {
			b.q.Kick()
		}
	}
}

// ready reports whether every commit p waits for has its outcome (or was
// withdrawn).
func ready(p *pending) bool {
	for _, q := range p.before {
		select {
		case <-q.done:
		case <-q.out:
		default:
			return false
		}
	}
	p.before = nil
	return true
}

func (s *Store) newPending(ctx context.Context, w registry.Write) *pending {
	km := &keyMemo{s: s}
	p := &pending{w: w, t: s.txnWith(w, km), ctx: ctx, done: make(chan struct{}), out: make(chan struct{})}
	p.keys = make([]string, 0, b2i(w.Resource != "")+len(w.Members)+len(w.Requests)+len(w.ReadKeys))
	if w.Resource != "" {
		p.keys = append(p.keys, km.recordKey(w.Resource).str)
	}
	for _, m := range w.Members {
		p.keys = append(p.keys, km.recordKey(m.Resource).str)
	}
	for _, rw := range w.Requests {
		p.keys = append(p.keys, km.requestKey(rw.Key).str)
	}
	for _, k := range w.ReadKeys {
		p.keys = append(p.keys, km.requestKey(k).str)
	}
	p.size = p.t.size
	return p
}

// group admits, for one group being formed, the writes whose keys no
// write already in it shares, within BatchWritesMax writes,
// batchBytesMax bytes and TxnOpsMax operations (the first always).
func (b *batcher) group() func(*pending) bool {
	taken := map[string]bool{}
	n, size, ops := 0, 0, 0
	return func(p *pending) bool {
		if n >= b.opt.BatchWritesMax || n > 0 && size+p.size > batchBytesMax {
			return false
		}
		// Each write goes nested in the group (sendGroup), where etcd
		// takes its operations within what the group's own leave: its
		// size m, plus the shared settings' get. Nested, a write counts at
		// most opsAlone (its own settings compare and get included when
		// not shared), so opsAlone+m+1 bounds either form.
		o := max(ops, p.t.opsAlone())
		if n > 0 && o+(n+1)+1 > b.opt.TxnOpsMax {
			return false
		}
		ops = o
		for _, k := range p.keys {
			if taken[k] {
				return false
			}
		}
		for _, k := range p.keys {
			taken[k] = true
		}
		n, size = n+1, size+p.size
		return true
	}
}

// send commits the group and delivers each write's outcome.
func (b *batcher) send(group []*pending) {
	ctxs := make([]context.Context, len(group))
	for i, p := range group {
		ctxs[i] = p.ctx
	}
	ctx, stop := batch.Context(group[0].ctx, ctxs)
	defer stop()
	b.txns.Add(1)
	b.writes.Add(uint64(len(group)))
	if len(group) == 1 {
		p := group[0]
		p.res, p.err = b.s.commitOne(ctx, p.w, &p.t)
		b.countFailed(p)
		close(p.done)
		return
	}
	b.sendGroup(ctx, group, sharedSettings(group))
}

// sendGroup sends a group of two or more as one transaction: with shared,
// the settings compared and read once for all (sharedSettings), else each
// member with its own compare and read of them.
func (b *batcher) sendGroup(ctx context.Context, group []*pending, shared bool) {
	req, first := &pb.TxnRequest{Success: make([]*pb.RequestOp, 0, len(group)+1)}, 0
	if shared {
		// One settings compare and one get of them for the whole group;
		// the members compare and read only their own keys.
		req.Compare = []*pb.Compare{group[0].t.setCmp}
		req.Success, first = append(req.Success, group[0].t.setGet), 1
	}
	for _, p := range group {
		var t *pb.TxnRequest
		if shared {
			t = p.t.nested()
		} else {
			t = p.t.request()
		}
		req.Success = append(req.Success, &pb.RequestOp{Request: &pb.RequestOp_RequestTxn{RequestTxn: t}})
	}
	resp, err := b.s.txn(ctx, req)
	if err != nil && refused(err) {
		// etcd checked the request and applied none of it (a server with
		// lower limits than ours): send each write alone.
		for _, p := range group {
			b.send([]*pending{p})
		}
		return
	}
	if err == nil && shared && !resp.Succeeded {
		// The settings moved since the members read them (rare: an
		// operator's change). Nothing was applied; send the group again
		// with each member's own compare, so each fails with its own
		// fresh snapshot as a lone commit would.
		b.txns.Add(1)
		b.sendGroup(ctx, group, false)
		return
	}
	var settings *pb.RangeResponse
	if shared && err == nil && len(resp.Responses) > 0 {
		settings = resp.Responses[0].GetResponseRange()
	}
	b.deliver(group, resp, err, first, settings)
}

// deliver gives each member its outcome: its nested transaction's
// response, the first at resp.Responses[first]; settings is the group's
// read of them when the members did not read their own.
func (b *batcher) deliver(group []*pending, resp *pb.TxnResponse, err error, first int, settings *pb.RangeResponse) {
	if err == nil && settings == nil && first > 0 {
		err = errors.New("the settings' response is missing")
	}
	for i, p := range group {
		switch {
		case err != nil:
			p.err = fmt.Errorf("etcdstore: commit: %w", err)
		case first+i >= len(resp.Responses) || resp.Responses[first+i].GetResponseTxn() == nil:
			p.err = fmt.Errorf("etcdstore: commit: grouped response %d of %d missing", i, len(group))
		default:
			sub := resp.Responses[first+i].GetResponseTxn()
			p.res, p.err = b.s.commitResult(p.w, uint64(resp.Header.Revision), sub.Succeeded, sub.Responses, settings)
		}
		b.countFailed(p)
		close(p.done)
	}
}

// countFailed counts p when its compares failed.
func (b *batcher) countFailed(p *pending) {
	if p.err == nil && !p.res.OK {
		b.failed.Add(1)
	}
}

// sharedSettings reports whether every member of group expects the same
// settings, so that one compare stands for all of them.
func sharedSettings(group []*pending) bool {
	a := &group[0].t
	for _, p := range group[1:] {
		b := &p.t
		if (a.setVal == nil) != (b.setVal == nil) || a.setRev != b.setRev || !bytes.Equal(a.setVal, b.setVal) {
			return false
		}
	}
	return true
}

// refused reports an error etcd returns before applying anything because
// of the request's shape: too many operations, a duplicate key, too large.
func refused(err error) bool {
	return errors.Is(err, rpctypes.ErrTooManyOps) || errors.Is(err, rpctypes.ErrDuplicateKey) || errors.Is(err, rpctypes.ErrRequestTooLarge)
}
