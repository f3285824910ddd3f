// Proves the election API in virtual time on a real registry: the first
// candidate leads at term 1, the second waits in the queue and leads at
// term 2 once the first resigns; Leader reads who leads; Observe streams
// the leader now and each change in order (a renewal is no change), and
// closes when its context ends.
package client_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/testkit/clienttest"
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
