// This file proves the lease shell itself — its goroutine, timers and
// contexts — in virtual time (testing/synctest, the system clock inside
// the bubble, a real registry): a lost renewal cancels Ctx at once and
// moves to OWNERSHIP_UNKNOWN, the registry's HELD answer issues a new
// context; an unreachable registry keeps the lease UNKNOWN past its TTL
// (the client never judges expiry), and the registry's word ends it
// EXPIRED. No test sleeps in real time.
package client_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/testkit/clienttest"
)

// switchableNet loses renewal answers (or every request) while told to.
type switchableNet struct {
	mu   sync.Mutex
	mode clienttest.Fault
}

func (n *switchableNet) set(f clienttest.Fault) {
	n.mu.Lock()
	n.mode = f
	n.mu.Unlock()
}

func (n *switchableNet) fault(op, _ string) clienttest.Fault {
	n.mu.Lock()
	defer n.mu.Unlock()
	if op == "Acquire" || op == "QueryRequest" {
		return clienttest.Pass
	}
	return n.mode
}

func newShellLease(t *testing.T) (*client.Lease, *switchableNet, *clienttest.Registry) {
	reg, err := clienttest.NewRegistry(client.SystemClock{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	net := &switchableNet{}
	lossy := &clienttest.Lossy{Inner: registry.Direct{Registry: reg.Registry, Owner: clienttest.OwnerA}, Fault: net.fault}
	s := client.NewSession(lossy, client.Options{Rand: rand.New(rand.NewPCG(9, 9))})
	l, err := s.Acquire(context.Background(), clienttest.Request("op-shell"))
	if err != nil {
		t.Fatal(err)
	}
	return l, net, reg
}

func TestShellLostRenewalThenHeldAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, net, _ := newShellLease(t)
		first := l.Ctx()
		net.set(clienttest.DropResponse) // renewals are applied; their answers lost
		for l.State() != client.StateUnknown {
			time.Sleep(10 * time.Millisecond)
		}
		if first.Err() == nil {
			t.Fatal("OWNERSHIP_UNKNOWN with the ownership context still live")
		}
		net.set(clienttest.Pass)
		for l.State() != client.StateHeld {
			time.Sleep(10 * time.Millisecond)
		}
		second := l.Ctx()
		if second.Err() != nil || second == first || first.Err() == nil {
			t.Fatal("HELD again must issue a new context and never revive the cancelled one")
		}
		if err := l.ReleaseNoDrain(context.Background()); err != nil {
			t.Fatal(err)
		}
		<-l.Done()
	})
}

func TestShellUnknownUntilTheRegistrySaysExpired(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, net, reg := newShellLease(t)
		net.set(clienttest.DropRequest) // the registry is unreachable
		time.Sleep(3 * clienttest.TTL)
		if st := l.State(); st != client.StateUnknown {
			t.Fatalf("three TTLs without the registry: %s, want OWNERSHIP_UNKNOWN (only the registry judges expiry)", st)
		}
		if is, err := reg.Status(context.Background(), l.Grant()); err != nil || is.Status.State != "EXPIRED" {
			t.Fatalf("the registry's own view: %v %v", is.Status, err)
		}
		net.set(clienttest.Pass)
		select {
		case <-l.Done():
		case <-time.After(10 * time.Second):
			t.Fatalf("reachable again for 10 s, still %s", l.State())
		}
		if st := l.State(); st != client.StateExpired {
			t.Fatalf("after the registry's answer: %s, want EXPIRED", st)
		}
	})
}
