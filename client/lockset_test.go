// This file proves the SDK's lock set against a real registry (memory
// store): a set is taken whole, members sorted, each under its member's
// request ID with its own fence, and a busy set takes nothing; one
// member broken at the registry ends the whole set in the client at its
// next renewal — Ctx cancelled, every member's envelopes refused, and its
// Release frees the other members at once — while the unbroken control
// renews on; a lost acquire answer is retried with
// the same set request ID and yields the very grants the registry made.
package client_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/testkit/clienttest"
	"github.com/fencegate/fencegate/testkit/gatetest"
	"github.com/fencegate/fencegate/wire"
)

// setDirect is registry.Direct (a client.SetTransport in process) that
// records the set acquires' request IDs; dropAcquire, when set, loses the answer
// to the next AcquireSet after the registry applied it (once).
type setDirect struct {
	registry.Direct
	mu          sync.Mutex
	dropAcquire bool
	acquireIDs  []string
}

func (d *setDirect) AcquireSet(ctx context.Context, req wire.LockSetRequest) (wire.IssuedSet, error) {
	is, err := d.Registry.AcquireSet(ctx, d.Owner, req)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.acquireIDs = append(d.acquireIDs, req.RequestID)
	if d.dropAcquire && err == nil {
		d.dropAcquire = false
		return wire.IssuedSet{}, client.ErrOutcomeUnknown
	}
	return is, err
}

// setSession is a manual session of owner over the env's registry.
func setSession(e *clienttest.Env, owner string, seed uint64) (*client.Session, *setDirect) {
	d := &setDirect{Direct: registry.Direct{Registry: e.Reg.Registry, Owner: owner}}
	return client.NewSession(d, client.Options{Clock: e.Clock, Rand: rand.New(rand.NewPCG(seed, seed)), Manual: true}), d
}

// advancing runs fn while advancing the fake clock in small steps, so
// backoffs pass without real waiting (clienttest.Env.Acquire's way).
func advancing[T any](e *clienttest.Env, fn func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := fn()
		ch <- result{v, err}
	}()
	for {
		select {
		case r := <-ch:
			return r.v, r.err
		case <-time.After(200 * time.Microsecond):
			e.Clock.Advance(20 * time.Millisecond)
		}
	}
}

var setReq = wire.LockSetRequest{Members: []string{"accounts/bob", "accounts/alice"}, OperationClass: "settle", TTLMs: 10_000}

func TestLockSetTakenWhole(t *testing.T) {
	e := clienttest.NewEnv(t, nil)
	a, _ := setSession(e, clienttest.OwnerA, 1)
	ls, err := a.AcquireSet(e.Ctx, setReq)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"accounts/alice", "accounts/bob"}
	if got := ls.Members(); !slices.Equal(got, want) {
		t.Fatalf("members %v, want sorted %v", got, want)
	}
	for i, r := range want {
		l, ok := ls.Lease(r)
		if !ok || l.Grant().Resource != r || l.Grant().RequestID != wire.MemberRequestID(ls.RequestID(), i) {
			t.Fatalf("member %s: %v, want its own grant under %s", r, l.Grant(), wire.MemberRequestID(ls.RequestID(), i))
		}
		v, err := e.Reg.LockStatus(e.Ctx, r)
		if err != nil || v.Holder == nil || v.Holder.Lease != l.Grant().Lease || !slices.Equal(v.Holder.LockSet, want) {
			t.Fatalf("registry's view of %s: %+v %v, want held by the set's member lease", r, v.Holder, err)
		}
	}
	if held, ok := a.Lease("accounts/alice"); !ok || held.Grant().Resource != "accounts/alice" {
		t.Fatalf("the session does not keep the member's lease")
	}
	if _, err := a.Acquire(e.Ctx, wire.AcquireRequest{Resource: "accounts/bob"}); !errors.Is(err, client.ErrAlreadyHeld) {
		t.Fatalf("a plain acquire of a member the session holds in a set: %v, want ErrAlreadyHeld", err)
	}

	b, _ := setSession(e, clienttest.OwnerB, 2)
	if _, err := b.AcquireSet(e.Ctx, wire.LockSetRequest{Members: []string{"accounts/carol", "accounts/bob"}, TTLMs: 10_000}); !errors.Is(err, wire.ErrBusy) {
		t.Fatalf("a set overlapping a held one: %v, want BUSY", err)
	}
	if v, _ := e.Reg.LockStatus(e.Ctx, "accounts/carol"); v.Holder != nil {
		t.Fatalf("a busy set holds its free member: %+v", v.Holder)
	}
	if err := ls.Release(e.Ctx); err != nil {
		t.Fatal(err)
	}
	if ls.State() != client.StateReleased || ls.Ctx().Err() == nil {
		t.Fatalf("released set: %s, ctx %v", ls.State(), ls.Ctx().Err())
	}
	for _, r := range want {
		if v, _ := e.Reg.LockStatus(e.Ctx, r); v.Holder != nil {
			t.Fatalf("%s still held after the set's release: %+v", r, v.Holder)
		}
	}
	bs, err := b.AcquireSet(e.Ctx, wire.LockSetRequest{Members: []string{"accounts/carol", "accounts/bob"}, TTLMs: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	if l, _ := bs.Lease("accounts/bob"); l.Fence() <= 1 {
		t.Fatalf("bob's next holder's fence %d, want above the set's", l.Fence())
	}
}

// TestLockSetOneMemberLostEndsTheSet: a set whose member bob ends at the
// registry ends as a whole in the client. Two ways bob ends: an operator's
// break (which, since Registry.Break ends every member of a set, also
// frees alice at once), and bob's lease released alone under its member
// lease ID (which leaves alice held at the registry, so only the client's
// one-state-machine rule stops alice being written to, and only the lost
// set's Release frees her before her TTL).
func TestLockSetOneMemberLostEndsTheSet(t *testing.T) {
	const none, broken, releasedAlone = "control: none broken", "bob broken", "bob released alone"
	for _, how := range []string{none, broken, releasedAlone} {
		t.Run(how, func(t *testing.T) {
			e := clienttest.NewEnv(t, nil)
			a, _ := setSession(e, clienttest.OwnerA, 1)
			ls, err := a.AcquireSet(e.Ctx, setReq)
			if err != nil {
				t.Fatal(err)
			}
			own := ls.Ctx()
			alice, _ := ls.Lease("accounts/alice")
			if _, err := alice.Envelope(1, gatetest.Payload("x")); err != nil {
				t.Fatalf("before: %v", err)
			}
			alice.Settle(1, "ACCEPTED")
			switch how {
			case broken:
				if _, err := e.Reg.Break(e.Ctx, "accounts/bob"); err != nil {
					t.Fatal(err)
				}
			case releasedAlone:
				bob, _ := ls.Lease("accounts/bob")
				if err := e.Reg.Release(e.Ctx, clienttest.OwnerA, "accounts/bob", bob.Grant().Lease); err != nil {
					t.Fatal(err)
				}
			}
			for i := 0; i < 1500 && ls.State() != client.StateExpired; i++ { // 30 s: three TTLs, renewed or lost
				e.Clock.Advance(20 * time.Millisecond)
				ls.Tick(e.Ctx)
			}
			if how == none {
				if ls.State() != client.StateHeld || own.Err() != nil {
					t.Fatalf("unbroken set after 30 s: %s, ctx %v; want HELD, renewed", ls.State(), own.Err())
				}
				return
			}
			if ls.State() != client.StateExpired || own.Err() == nil {
				t.Fatalf("%s: the set is %s, ctx %v; want EXPIRED and cancelled", how, ls.State(), own.Err())
			}
			select {
			case <-ls.Done():
			default:
				t.Fatal("Done not closed")
			}
			if _, err := alice.Envelope(2, gatetest.Payload("y")); !errors.Is(err, client.ErrNotCertain) {
				t.Fatalf("alice (unbroken) after %s: %v, want ErrNotCertain: the client keeps no part of a set", how, err)
			}
			if _, ok := a.Lease("accounts/alice"); ok {
				t.Fatal("the session still keeps alice's lease")
			}
			v, _ := e.Reg.LockStatus(e.Ctx, "accounts/alice")
			switch {
			case how == broken && v.Holder != nil:
				t.Fatalf("alice still held after bob's break: %+v; a member's break ends the whole set (Registry.Break)", v.Holder)
			case how == releasedAlone && v.Holder == nil:
				t.Fatal("alice free before the release: the registry renews no member of a set it refused, but ends none either")
			}
			if err := ls.Release(e.Ctx); err != nil { // the rest of the set, member by member
				t.Fatal(err)
			}
			if v, _ := e.Reg.LockStatus(e.Ctx, "accounts/alice"); v.Holder != nil {
				t.Fatalf("alice still held after the lost set's release: %+v; it would wait out its TTL", v.Holder)
			}
		})
	}
}

func TestLockSetLostAnswerRetriedSameID(t *testing.T) {
	e := clienttest.NewEnv(t, nil)
	a, d := setSession(e, clienttest.OwnerA, 1)
	d.dropAcquire = true
	ls, err := advancing(e, func() (*client.LockSet, error) { return a.AcquireSet(e.Ctx, setReq) })
	if err != nil {
		t.Fatal(err)
	}
	if len(d.acquireIDs) != 2 || d.acquireIDs[0] != d.acquireIDs[1] || d.acquireIDs[0] != ls.RequestID() {
		t.Fatalf("acquire calls under %v, want two under the set's one request ID %s", d.acquireIDs, ls.RequestID())
	}
	for _, l := range ls.Leases() {
		v, err := e.Reg.LockStatus(e.Ctx, l.Grant().Resource)
		if err != nil || v.Holder == nil || v.Holder.Lease != l.Grant().Lease || v.HighestFence != l.Fence() {
			t.Fatalf("%s: registry holder %+v fence %d; the retry must answer the grant the lost call made (lease %s fence %d)",
				l.Grant().Resource, v.Holder, v.HighestFence, l.Grant().Lease, l.Fence())
		}
	}
}

// TestLockSetSessionReservesMembers: a session runs one identity per
// resource, sets included — a set whose answer was lost keeps its request
// ID pending, and until it is presumed over a plain acquire of a member
// (or another set sharing one) is refused *PendingError; a transport
// without lock sets refuses before anything is sent.
func TestLockSetSessionReservesMembers(t *testing.T) {
	e := clienttest.NewEnv(t, nil)
	a, d := setSession(e, clienttest.OwnerA, 1)
	d.dropAcquire = true
	ctx, cancel := context.WithCancel(e.Ctx)
	cancel() // the first answer is lost and the call gives up: the set's request ID stays pending
	if _, err := a.AcquireSet(ctx, setReq); err == nil {
		t.Fatal("a set acquire whose answer was lost and whose ctx ended succeeded")
	}
	var pe *client.PendingError
	if _, err := a.Acquire(e.Ctx, wire.AcquireRequest{Resource: "accounts/alice"}); !errors.As(err, &pe) {
		t.Fatalf("a plain acquire of a member of a pending set: %v, want *PendingError", err)
	}
	if _, err := a.AcquireSet(e.Ctx, wire.LockSetRequest{Members: []string{"accounts/bob", "accounts/carol"}, TTLMs: 10_000}); !errors.As(err, &pe) {
		t.Fatalf("a set sharing a member with a pending set: %v, want *PendingError", err)
	}
	ls, err := advancing(e, func() (*client.LockSet, error) { return a.AcquireSet(e.Ctx, setReq) }) // the same set again: its pending request ID
	if err != nil {
		t.Fatal(err)
	}
	if len(d.acquireIDs) < 2 || d.acquireIDs[len(d.acquireIDs)-1] != d.acquireIDs[0] || ls.RequestID() != d.acquireIDs[0] {
		t.Fatalf("request IDs %v, set %s: the same set must reuse its pending ID", d.acquireIDs, ls.RequestID())
	}
	plain := client.NewSession(&clienttest.Lossy{Inner: registry.Direct{Registry: e.Reg.Registry, Owner: "x"}}, client.Options{Clock: e.Clock, Manual: true})
	if _, err := plain.AcquireSet(e.Ctx, setReq); !errors.Is(err, client.ErrRefused) {
		t.Fatalf("a transport without lock sets: %v, want ErrRefused", err)
	}
}

// TestLockSetCrossedOrderInProcess: two sessions on the real clock, their
// background loops running, take {alice, bob} and {bob, alice} again and
// again for lockSetCrossedFor: every LockSet returns (no deadlock), and
// while one holds the set the other holds neither member.
func TestLockSetCrossedOrderInProcess(t *testing.T) {
	const lockSetCrossedFor = 2 * time.Second
	reg, err := clienttest.NewRegistry(clock.System{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var holders atomic.Int32 // sessions holding the set now
	until := time.Now().Add(lockSetCrossedFor)
	runs := make([]int, 2)
	var wg sync.WaitGroup
	for i, members := range [][]string{{"accounts/alice", "accounts/bob"}, {"accounts/bob", "accounts/alice"}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := client.NewSession(registry.Direct{Registry: reg.Registry, Owner: fmt.Sprintf("worker-%d", i)}, client.Options{})
			for time.Now().Before(until) {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				ls, err := s.LockSet(ctx, wire.LockSetRequest{Members: members, TTLMs: 5000})
				cancel()
				if err != nil {
					t.Errorf("worker %d: %v (a deadlock runs out the wait)", i, err)
					return
				}
				if n := holders.Add(1); n != 1 {
					t.Errorf("worker %d holds the set while the other does (%d holders)", i, n)
				}
				time.Sleep(time.Millisecond)
				holders.Add(-1)
				if err := ls.Release(context.Background()); err != nil {
					t.Errorf("worker %d: release: %v", i, err)
					return
				}
				runs[i]++
			}
		}()
	}
	wg.Wait()
	if runs[0] < 3 || runs[1] < 3 {
		t.Fatalf("runs %v in %s: each crossed-order session must get the set again and again", runs, lockSetCrossedFor)
	}
	t.Logf("runs %v in %s", runs, lockSetCrossedFor)
}

// TestLockSetWaitRunsOut: LockSet under a ctx deadline queues until
// CallTimeout before it, then answers WAIT_TIMEOUT naming the busy member
// (the registry's *wire.BusyError), holding nothing; the same call
// without a deadline is served once the holder releases.
func TestLockSetWaitRunsOut(t *testing.T) {
	reg, err := clienttest.NewRegistry(clock.System{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := client.NewSession(registry.Direct{Registry: reg.Registry, Owner: "worker-a"}, client.Options{})
	b := client.NewSession(registry.Direct{Registry: reg.Registry, Owner: "worker-b"}, client.Options{CallTimeout: 500 * time.Millisecond})
	held, err := a.Acquire(context.Background(), wire.AcquireRequest{Resource: "accounts/bob", TTLMs: 5000})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	_, err = b.LockSet(ctx, setReq)
	var be *wire.BusyError
	if !errors.Is(err, wire.ErrWaitTimeout) || !errors.As(err, &be) || be.Resource != "accounts/bob" {
		t.Fatalf("waiting past the deadline: %v, want WAIT_TIMEOUT naming accounts/bob", err)
	}
	// Its ticket may stay queued for the registry's grace (a re-ask keeps
	// its place, as a plain waiter's does), but it holds nothing.
	if v, _ := reg.LockStatus(context.Background(), "accounts/alice"); v.Holder != nil {
		t.Fatalf("a set whose wait ran out holds alice: %+v", v.Holder)
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		_ = held.Release(context.Background())
	}()
	ls, err := b.LockSet(context.Background(), setReq)
	if err != nil {
		t.Fatal(err)
	}
	_ = ls.Release(context.Background())
}
