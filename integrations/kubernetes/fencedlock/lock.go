package fencedlock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	rl "k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/wire"
)

// Lock is client-go's resourcelock.Interface over a fencegate election
// (client.Election): the registry arbitrates who leads (one grant at a
// time per resource, the fence rising with every term), and the SDK's
// lease keeps the term (renewing in the background, its Ctx cancelled the
// moment ownership is no longer certain). It is also controller-runtime's
// manager.Options.LeaderElectionResourceLockInterface.
//
// A Lock serves one term: once the term it won ends (ownership no longer
// certain, the stop lead reached, or released), every later call fails
// with ErrTermOver and the elector stops; make a new Lock (and
// LeaderElector) to campaign again. client-go's elector and
// controller-runtime's manager stop after one term too. The term's grant
// is the one Election.Campaign asks for (operation "lead"), so Go
// candidates on client.Election and client-go candidates on a Lock may
// share an election.
//
// Safe for concurrent use.
type Lock struct {
	s   *client.Session
	e   *client.Election
	cfg Config
	// stopLead: the lock answers no from the lease's local deadline −
	// stopLead on (Config.stopLead; the negative control sets 0).
	stopLead time.Duration

	mu       sync.Mutex
	lease    *client.Lease      // the term, once won
	leaseCtx context.Context    // the lease's first ownership context: never revived
	term     context.Context    // ends when the term does
	endTerm  context.CancelFunc // ends term
	over     error              // why the term ended (nil while it lasts or before it)
}

// A Lock is what client-go's elector and controller-runtime's
// LeaderElectionResourceLockInterface take.
var _ rl.Interface = (*Lock)(nil)

// ErrTermOver: the term this Lock won has ended; a Lock serves one term.
var ErrTermOver = errors.New("fencedlock: the term is over")

// ErrNotLeading: the Lock holds no term now.
var ErrNotLeading = errors.New("fencedlock: not leading")

// New returns the lock cfg describes, campaigning through s (whose
// Transport must serve lock views: *httpclient.Client does). It refuses
// a Config no term can be kept under (Config.Check) and a Transport
// without lock views (client.ErrNoLockViews).
func New(s *client.Session, cfg Config) (*Lock, error) {
	if err := cfg.Check(s.Options()); err != nil {
		return nil, err
	}
	if _, ok := s.Transport().(client.LockViewer); !ok {
		return nil, fmt.Errorf("fencedlock: %w", client.ErrNoLockViews)
	}
	e, err := client.NewElection(s, cfg.Resource)
	if err != nil {
		return nil, fmt.Errorf("fencedlock: %w", err)
	}
	if cfg.OperationClass == "" {
		cfg.OperationClass = client.CampaignClassDefault
	}
	return &Lock{s: s, e: e, cfg: cfg, stopLead: cfg.stopLead()}, nil
}

// Config returns the lock's configuration (defaults filled).
func (l *Lock) Config() Config { return l.cfg }

// Identity is the candidate's identity (Config.Identity).
func (l *Lock) Identity() string { return l.cfg.Identity }

// Describe names the election for client-go's logs.
func (l *Lock) Describe() string { return "fencegate:" + l.cfg.Resource }

// RecordEvent hands client-go's event to Config.OnEvent, if set.
func (l *Lock) RecordEvent(event string) {
	if l.cfg.OnEvent != nil {
		l.cfg.OnEvent(l.cfg.Identity, event)
	}
}

// Get reads the election (Election.Leader) as a LeaderElectionRecord:
// HolderIdentity is this lock's Identity while the registry's leader is
// this lock's term, "OWNER#TERM" for another leader (the registry knows
// the leader's authenticated identity and term, not its candidate name),
// and "" when nobody leads; LeaderTransitions is the leader's term (terms
// only rise); AcquireTime and RenewTime are when the registry granted the
// term, so the record changes only when the term does. The record is
// advisory: the registry decides at Update. Once the term is over, Get
// fails at once with ErrTermOver, without a call, so that client-go's
// release on cancel does not delay OnStoppedLeading.
func (l *Lock) Get(ctx context.Context) (*rl.LeaderElectionRecord, []byte, error) {
	l.mu.Lock()
	over, mine := l.over, l.lease
	l.mu.Unlock()
	if over != nil {
		return nil, nil, over
	}
	leader, err := l.e.Leader(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("fencedlock: get: %w", err)
	}
	r := l.record(leader, mine)
	raw, err := json.Marshal(r)
	if err != nil {
		return nil, nil, fmt.Errorf("fencedlock: get %s: %w", l.cfg.Resource, err)
	}
	return &r, raw, nil
}

// record is the registry's leader as client-go's record; mine is this
// lock's term, if any.
func (l *Lock) record(leader client.Leader, mine *client.Lease) rl.LeaderElectionRecord {
	r := rl.LeaderElectionRecord{LeaseDurationSeconds: int(l.cfg.LeaseDuration / time.Second)}
	if leader.Identity == "" {
		return r
	}
	r.HolderIdentity = leader.Identity + "#" + strconv.FormatUint(leader.Term, 10)
	if mine != nil && mine.Grant().Lease == leader.Lease {
		r.HolderIdentity = l.cfg.Identity
	}
	r.LeaderTransitions = int(leader.Term)
	r.AcquireTime = metav1.NewTime(leader.Since)
	r.RenewTime = r.AcquireTime
	return r
}

// Create is Update: the registry's resource needs no creating.
func (l *Lock) Create(ctx context.Context, ler rl.LeaderElectionRecord) error {
	return l.Update(ctx, ler)
}

// Update is client-go's write of the record, read as what it asks for:
//   - HolderIdentity "" (client-go's release on cancel): the term ends
//     and its lease is released in the background; nil.
//   - HolderIdentity Identity() with no term yet: acquire the resource at
//     the registry without queueing; an error while another holds it (or
//     lock-delay lasts), nil once this lock leads.
//   - HolderIdentity Identity() during the term: a renewal. The SDK
//     renews the lease on its own; Update answers nil while the lease is
//     certain and its local deadline is more than the stop lead
//     (RenewDeadline + RetryPeriod + StopSlack) away. Otherwise the term
//     ends for good (ErrTermOver), and the elector, which gives up at most
//     RenewDeadline + RetryPeriod after the first error, calls
//     OnStoppedLeading no later than the local deadline.
//
// Any other HolderIdentity, or a LeaseDurationSeconds that is not
// Config.LeaseDuration's, is refused: the elector was given another
// lock's identity or other timings. (RenewDeadline and RetryPeriod never
// reach the lock: give the elector the Config's, as ElectionConfig does.)
func (l *Lock) Update(ctx context.Context, ler rl.LeaderElectionRecord) error {
	if ler.HolderIdentity == "" {
		l.release()
		return nil
	}
	if ler.HolderIdentity != l.cfg.Identity {
		return fmt.Errorf("fencedlock: update by %q: %w: this lock's identity is %q", ler.HolderIdentity, wire.ErrInvalid, l.cfg.Identity)
	}
	if want := int(l.cfg.LeaseDuration / time.Second); ler.LeaseDurationSeconds != want {
		return &TimingError{Setting: "LeaseDuration", Value: strconv.Itoa(ler.LeaseDurationSeconds) + "s",
			Want: strconv.Itoa(want) + "s", Why: "the elector's LeaseDuration must be the lock's Config.LeaseDuration"}
	}
	l.mu.Lock()
	over, lease := l.over, l.lease
	l.mu.Unlock()
	switch {
	case over != nil:
		return over
	case lease == nil:
		return l.acquire(ctx)
	}
	return l.renewed()
}

// renewed answers a renewal during the term: nil while it lasts, else
// the end of the term.
func (l *Lock) renewed() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.over != nil {
		return l.over
	}
	now, deadline := l.s.Options().Clock.Now(), l.lease.Deadline()
	why := ""
	switch {
	case l.leaseCtx.Err() != nil:
		why = "ownership stopped being certain (" + string(l.lease.State()) + ")"
	case !now.Before(deadline.Add(-l.stopLead)):
		why = fmt.Sprintf("the local deadline %s is within the stop lead %s", deadline.Format(time.RFC3339Nano), l.stopLead)
	default:
		return nil
	}
	l.endLocked(fmt.Errorf("%w: %s, term %d: %s", ErrTermOver, l.cfg.Resource, l.lease.Fence(), why))
	return l.over
}

// acquire tries for the resource once, without queueing, asking for the
// grant Election.Campaign asks for.
func (l *Lock) acquire(ctx context.Context) error {
	lease, err := l.s.Acquire(ctx, wire.AcquireRequest{Resource: l.cfg.Resource, OperationID: "lead",
		OperationClass: l.cfg.OperationClass, TTLMs: uint64(l.cfg.LeaseDuration / time.Millisecond)})
	if err != nil {
		return fmt.Errorf("fencedlock: acquire %s: %w", l.cfg.Resource, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lease != nil || l.over != nil { // a concurrent Update won first, or the lock was released meanwhile
		go func() { _ = lease.Release(context.Background()) }()
		return fmt.Errorf("fencedlock: acquire %s: %w: the lock already had its term", l.cfg.Resource, ErrTermOver)
	}
	l.lease, l.leaseCtx = lease, lease.Ctx()
	l.term, l.endTerm = context.WithCancel(context.Background())
	context.AfterFunc(l.leaseCtx, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.endLocked(fmt.Errorf("%w: %s, term %d: ownership stopped being certain (%s)", ErrTermOver, l.cfg.Resource, lease.Fence(), lease.State()))
	})
	return nil
}

// release ends the term (client-go's release): the lease is given up in
// the background, draining its unsettled envelopes first.
func (l *Lock) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.endLocked(fmt.Errorf("%w: %s: released", ErrTermOver, l.cfg.Resource))
}

// endLocked ends the term for reason (the first reason stays) and
// releases its lease in the background; l.mu is held.
func (l *Lock) endLocked(reason error) {
	if l.over != nil {
		return
	}
	l.over = reason
	if l.endTerm != nil {
		l.endTerm()
	}
	if lease := l.lease; lease != nil {
		go func() { _ = lease.Release(context.Background()) }()
	}
}

// Lease returns the term's lease while this lock leads: its Fence() is
// the term, Grant() the grant, and client.Apply / client.Send write
// through a gate under it. ErrNotLeading before the term, ErrTermOver
// (the reason) after it.
func (l *Lock) Lease() (*client.Lease, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.over != nil:
		return nil, l.over
	case l.lease == nil:
		return nil, ErrNotLeading
	}
	return l.lease, nil
}
