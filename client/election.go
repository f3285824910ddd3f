package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/wire"
)

// Election is a leader election over one registry resource, as etcd's
// concurrency.Election and client-go's leaderelection are — with one
// difference that matters: the leader's term is its grant's fence, and a
// protected resource checks it. A deposed leader that still believes it
// leads (paused past its lease, partitioned away) is refused at every gate
// once its successor has written, so split brain harms nothing there.
//
// Candidates queue at the registry in FIFO order (Campaign waits as
// Session.Lock does, in long polls, keeping its place); the holder of the
// resource leads until it resigns (Lease.Release) or its lease ends.
// Leader and Observe read the registry's view of the resource and need a
// Transport that serves lock views (LockViewer: *httpclient.Client and
// registry.Direct do).
type Election struct {
	s        *Session
	resource string
}

// LockViewer is a Transport that also serves the registry's lock views.
type LockViewer interface {
	// LockStatus reads the resource's lock (holder, fences, waiters).
	LockStatus(ctx context.Context, resource string) (wire.LockStatus, error)
	// WatchLock answers once the lock differs from what was seen at
	// afterRevision, or after wait.
	WatchLock(ctx context.Context, resource string, afterRevision uint64, wait time.Duration) (wire.LockStatus, error)
}

// Defaults of an election.
const (
	// CampaignClassDefault is the operation class of a campaign's grant.
	CampaignClassDefault = "lead"
	// ObserveWaitDefault is how long one of Observe's long polls waits for
	// a change before it asks again, 30 s.
	ObserveWaitDefault = 30 * time.Second
	// ObserveRetryDefault is how long Observe waits after a failed poll.
	ObserveRetryDefault = time.Second
)

// ErrNoLockViews: the session's Transport serves no lock views, so
// Leader and Observe cannot read who leads.
var ErrNoLockViews = errors.New("client: the transport serves no lock views (client.LockViewer)")

// NewElection returns the election held on resource name (a resource ID:
// the resource policy's rules and `fencegate status` apply to it, e.g.
// "election/web-primary").
func NewElection(s *Session, name string) (*Election, error) {
	if err := grant.ValidateResource(name); err != nil {
		return nil, fmt.Errorf("client: election %q: %w: %w", name, wire.ErrInvalid, err)
	}
	return &Election{s: s, resource: name}, nil
}

// Name is the election's resource.
func (e *Election) Name() string { return e.resource }

// Campaign is one candidacy: how it is granted and named.
type Campaign struct {
	// OperationID names what the leader does under its grant (the grant
	// binds it; every write the leader makes is a segment of it).
	// Optional, defaults to "lead".
	OperationID string
	// OperationClass is the grant's class (a gate may allow only some).
	// Optional, defaults to CampaignClassDefault.
	OperationClass string
	// TTL is the leader's lease: how long a leader that stops renewing
	// (a pause, a partition) keeps others waiting. Optional, defaults to
	// Options.TTLDefault.
	TTL time.Duration
}

// Campaign waits, as long as ctx allows, until this session leads, and
// returns the leader's lease: its Ctx() ends the moment leadership is no
// longer certain, its Grant().FenceToken is the term, and its envelopes
// carry that term to every protected write. Resign with Release.
func (e *Election) Campaign(ctx context.Context, c Campaign) (*Lease, error) {
	if c.OperationID == "" {
		c.OperationID = "lead"
	}
	if c.OperationClass == "" {
		c.OperationClass = CampaignClassDefault
	}
	l, err := e.s.Lock(ctx, wire.AcquireRequest{Resource: e.resource, OperationID: c.OperationID, OperationClass: c.OperationClass,
		TTLMs: uint64(c.TTL / time.Millisecond)})
	if err != nil {
		return nil, fmt.Errorf("client: campaign %s: %w", e.resource, err)
	}
	return l, nil
}

// Leader is who leads an election, as the registry read it.
type Leader struct {
	Identity string    // "" when nobody leads
	Term     uint64    // the leader's fence; terms only rise
	Lease    string    // the leader's lease
	Since    time.Time // registry clock: when it was granted
	ReadAt   time.Time // registry clock: the read
	Revision uint64    // the election's record revision at the read
	// Err, on the last value Observe sends before it closes the channel,
	// is the refusal that ended the stream (the other fields are zero).
	Err error `json:"-"`
}

// leaderOf is who v says leads.
func leaderOf(v wire.LockStatus) Leader {
	l := Leader{ReadAt: v.ReadAt, Revision: v.Revision}
	if h := v.Holder; h != nil {
		l.Identity, l.Term, l.Lease, l.Since = h.Owner, h.Fence, h.Lease, h.Since
	}
	return l
}

func (e *Election) viewer() (LockViewer, error) {
	lv, ok := e.s.t.(LockViewer)
	if !ok {
		return nil, ErrNoLockViews
	}
	return lv, nil
}

// Leader reads who leads now (Identity "" when nobody does).
func (e *Election) Leader(ctx context.Context) (Leader, error) {
	lv, err := e.viewer()
	if err != nil {
		return Leader{}, err
	}
	v, err := lv.LockStatus(ctx, e.resource)
	if err != nil {
		return Leader{}, fmt.Errorf("client: leader of %s: %w", e.resource, err)
	}
	return leaderOf(v), nil
}

// Observe streams who leads: the leader now, then each change (a new
// term, or nobody leading), until ctx ends, when the channel closes. It
// long-polls the registry (ObserveWaitDefault a poll; a renewal also wakes
// it, and is not sent on). A poll that fails for want of an answer is
// retried after ObserveRetryDefault. A refusal is not retried: it would
// be refused again forever (the identity may not see the election:
// FORBIDDEN_RESOURCE; its credentials are wrong: UNAUTHENTICATED; any
// error wrapping ErrRefused or wire.ErrInvalid). Observe returns it when
// the first read is refused; a later one ends the stream with a last
// Leader whose Err is set. A slow reader sees every change in order; the
// stream does not skip terms it saw.
func (e *Election) Observe(ctx context.Context) (<-chan Leader, error) {
	lv, err := e.viewer()
	if err != nil {
		return nil, err
	}
	first, err := lv.LockStatus(ctx, e.resource)
	if err != nil && refused(err) {
		return nil, fmt.Errorf("client: observe %s: %w", e.resource, err)
	}
	ch := make(chan Leader)
	go e.observe(ctx, lv, first, err == nil, ch)
	return ch, nil
}

// observe feeds ch from long polls, starting after first (when ok).
func (e *Election) observe(ctx context.Context, lv LockViewer, first wire.LockStatus, ok bool, ch chan<- Leader) {
	defer close(ch)
	var last Leader
	var rev uint64
	sent := false
	send := func(l Leader) bool {
		select {
		case ch <- l:
			return true
		case <-ctx.Done():
			return false
		}
	}
	v, err := first, error(nil)
	for ctx.Err() == nil {
		if ok {
			rev = v.Revision
			if l := leaderOf(v); !sent || l.Lease != last.Lease {
				if !send(l) {
					return
				}
				sent, last = true, l
			}
		}
		v, err = lv.WatchLock(ctx, e.resource, rev, ObserveWaitDefault)
		if ok = err == nil; ok {
			continue
		}
		if refused(err) {
			send(Leader{Err: fmt.Errorf("client: observe %s: %w", e.resource, err)})
			return
		}
		select {
		case <-ctx.Done():
		case <-e.s.o.Clock.After(ObserveRetryDefault):
		}
	}
}

// refused reports whether err is an answer that asking again would only
// repeat: a refusal of the caller or of its request.
func refused(err error) bool {
	return errors.Is(err, ErrRefused) || errors.Is(err, wire.ErrInvalid)
}
