// Proves the election API in virtual time on a real registry: the first
// candidate leads at term 1, the second waits in the queue and leads at
// term 2 once the first resigns; Leader reads who leads; Observe streams
// the leader now and each change in order (a renewal is no change), and
// closes when its context ends, and ends (or never starts) on a refusal
// rather than retrying it.
package client_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/testkit/clienttest"
	"github.com/fencegate/fencegate/wire"
)

func TestElectionTermsRiseAndObserveSeesEachLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		reg, err := clienttest.NewRegistry(client.SystemClock{}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		election := func(owner string, seed uint64) *client.Election {
			s := client.NewSession(registry.Direct{Registry: reg.Registry, Owner: owner}, client.Options{Rand: rand.New(rand.NewPCG(seed, seed))})
			e, err := client.NewElection(s, "election/web")
			if err != nil {
				t.Fatal(err)
			}
			return e
		}
		a, b, watcher := election(clienttest.OwnerA, 1), election(clienttest.OwnerB, 2), election("watcher", 3)
		octx, stopObserving := context.WithCancel(ctx)
		seen, err := watcher.Observe(octx)
		if err != nil {
			t.Fatal(err)
		}
		if l := <-seen; l.Identity != "" {
			t.Fatalf("before any campaign Observe says %+v leads", l)
		}
		la, err := a.Campaign(ctx, client.Campaign{TTL: 6 * time.Second})
		if err != nil || la.Grant().FenceToken != 1 {
			t.Fatalf("A's campaign: %v", err)
		}
		if l := <-seen; l.Identity != clienttest.OwnerA || l.Term != 1 {
			t.Fatalf("Observe after A won: %+v", l)
		}
		won := make(chan *client.Lease)
		go func() {
			lb, err := b.Campaign(ctx, client.Campaign{TTL: 6 * time.Second})
			if err != nil {
				t.Error(err)
			}
			won <- lb
		}()
		time.Sleep(20 * time.Second) // A renews meanwhile: no change to see
		if l, err := b.Leader(ctx); err != nil || l.Identity != clienttest.OwnerA {
			t.Fatalf("Leader while A leads: %+v %v", l, err)
		}
		if err := la.ReleaseNoDrain(ctx); err != nil {
			t.Fatal(err)
		}
		lb := <-won
		if l := <-seen; l.Identity != clienttest.OwnerB || l.Term != 2 || lb.Grant().FenceToken != 2 {
			t.Fatalf("Observe after A resigned: %+v (B's term %d)", l, lb.Grant().FenceToken)
		}
		_ = lb.ReleaseNoDrain(ctx)
		if l := <-seen; l.Identity != "" {
			t.Fatalf("Observe after B resigned: %+v", l)
		}
		stopObserving()
		for range seen { // closes once ctx ended
		}
	})
}

// refusingViewer serves lock views until fail says otherwise, then fails
// every read with fail's error.
type refusingViewer struct {
	registry.Direct
	fail func() error
}

func (r refusingViewer) LockStatus(ctx context.Context, resource string) (wire.LockStatus, error) {
	if err := r.fail(); err != nil {
		return wire.LockStatus{}, err
	}
	return r.Direct.LockStatus(ctx, resource)
}

func (r refusingViewer) WatchLock(ctx context.Context, resource string, after uint64, wait time.Duration) (wire.LockStatus, error) {
	if err := r.fail(); err != nil {
		return wire.LockStatus{}, err
	}
	return r.Direct.WatchLock(ctx, resource, after, wait)
}

// TestObserveStopsOnRefusal: a refused first read is Observe's error; a
// refusal later ends the stream with a last Leader carrying it; and the
// negative control, a read without an answer, is retried and the stream
// goes on.
func TestObserveStopsOnRefusal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		reg, err := clienttest.NewRegistry(client.SystemClock{}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		var failWith atomic.Pointer[error]
		set := func(err error) { failWith.Store(&err) }
		set(nil)
		fail := func() error { return *failWith.Load() }
		s := client.NewSession(refusingViewer{registry.Direct{Registry: reg.Registry, Owner: "watcher"}, fail}, client.Options{})
		e, err := client.NewElection(s, "election/x")
		if err != nil {
			t.Fatal(err)
		}
		refusal := fmt.Errorf("test: FORBIDDEN_RESOURCE: %w", client.ErrRefused)
		set(refusal)
		if _, err := e.Observe(ctx); !errors.Is(err, client.ErrRefused) {
			t.Fatalf("a refused first read: Observe returned %v", err)
		}
		set(nil)
		seen, err := e.Observe(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if l := <-seen; l.Err != nil {
			t.Fatalf("first value %+v", l)
		}
		set(fmt.Errorf("test: lost: %w", client.ErrOutcomeUnknown)) // retried
		time.Sleep(5 * time.Minute)
		select {
		case l, ok := <-seen:
			t.Fatalf("reads without an answer ended or fed the stream: %+v (open %v)", l, ok)
		default:
		}
		set(refusal)
		time.Sleep(time.Minute) // the pending long poll ends, its successor is refused
		select {
		case l, ok := <-seen:
			if !ok || !errors.Is(l.Err, client.ErrRefused) {
				t.Fatalf("after a refusal: %+v (open %v), want a last value with the refusal", l, ok)
			}
		default:
			t.Fatal("a refusal did not end the stream")
		}
		if _, ok := <-seen; ok {
			t.Fatal("the stream stayed open after its refusal")
		}
	})
}
