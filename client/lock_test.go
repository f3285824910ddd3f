// This file proves, in virtual time, the SDK's blocking Lock (it waits as
// long as its context allows, past the registry's 30 s cap on one wait,
// and is served when the holder lets go) and that an Acquire against an
// unreachable registry stops with the cause instead of hanging, keeping
// its request ID pending.
package client_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/testkit/clienttest"
	"github.com/fencegate/fencegate/wire"
)

func TestLockWaitsPastTheRegistryCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		reg, err := clienttest.NewRegistry(client.SystemClock{}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		session := func(owner string, seed uint64) *client.Session {
			return client.NewSession(registry.Direct{Registry: reg.Registry, Owner: owner}, client.Options{Rand: rand.New(rand.NewPCG(seed, seed))})
		}
		holder, err := session(clienttest.OwnerA, 1).Acquire(ctx, clienttest.Request("op-a"))
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			time.Sleep(70 * time.Second) // two and a half registry wait caps
			_ = holder.ReleaseNoDrain(ctx)
		}()
		start := time.Now()
		l, err := session(clienttest.OwnerB, 2).Lock(ctx, clienttest.Request("op-b"))
		if err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited < 70*time.Second || waited > 71*time.Second {
			t.Fatalf("Lock returned after %s, want just after the holder's release at 70 s", waited)
		}
		if l.State() != client.StateHeld || l.Grant().FenceToken != 2 {
			t.Fatalf("lock: %s fence %d", l.State(), l.Grant().FenceToken)
		}
		_ = l.ReleaseNoDrain(ctx)
	})
}

func TestLockEndsWithItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg, _ := clienttest.NewRegistry(client.SystemClock{}, nil, nil)
		a := client.NewSession(registry.Direct{Registry: reg.Registry, Owner: clienttest.OwnerA}, client.Options{Rand: rand.New(rand.NewPCG(1, 1))})
		holder, err := a.Acquire(context.Background(), clienttest.Request("op-a"))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
		defer cancel()
		b := client.NewSession(registry.Direct{Registry: reg.Registry, Owner: clienttest.OwnerB}, client.Options{Rand: rand.New(rand.NewPCG(2, 2))})
		start := time.Now()
		_, err = b.Lock(ctx, clienttest.Request("op-b"))
		var be *wire.BusyError
		if !errors.Is(err, wire.ErrWaitTimeout) || !errors.As(err, &be) || be.Holder == nil || be.Holder.Owner != clienttest.OwnerA {
			t.Fatalf("lock past its deadline: %v, want WAIT_TIMEOUT naming %s", err, clienttest.OwnerA)
		}
		if waited := time.Since(start); waited > 40*time.Second {
			t.Fatalf("lock returned after %s, past its context's 40 s", waited)
		}
		// Cancelled rather than timed out: the context's error.
		cctx, stop := context.WithCancel(context.Background())
		time.AfterFunc(5*time.Second, stop)
		if _, err := b.Lock(cctx, clienttest.Request("op-b")); !errors.Is(err, context.Canceled) {
			t.Fatalf("lock cancelled: %v", err)
		}
		_ = holder.ReleaseNoDrain(context.Background())
		time.Sleep(3 * time.Second) // the cancelled waiter's ticket lapses
	})
}

// deadRegistry refuses every connection, as a stopped server does.
type deadRegistry struct{}

var errRefused = &dialError{syscall.ECONNREFUSED}

type dialError struct{ err error }

func (e *dialError) Error() string { return "dial tcp 127.0.0.1:7420: " + e.err.Error() }
func (e *dialError) Unwrap() error { return e.err }

func (deadRegistry) Acquire(context.Context, wire.AcquireRequest) (wire.Issued, error) {
	return wire.Issued{}, errRefused
}
func (deadRegistry) Renew(context.Context, string, string) (wire.Issued, error) {
	return wire.Issued{}, errRefused
}
func (deadRegistry) Release(context.Context, string, string) error { return errRefused }
func (deadRegistry) Status(context.Context, *grant.Grant) (wire.Issued, error) {
	return wire.Issued{}, errRefused
}
func (deadRegistry) QueryRequest(context.Context, string) (wire.Issued, error) {
	return wire.Issued{}, errRefused
}

func TestAcquireAgainstADeadRegistrySaysWhy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := client.NewSession(deadRegistry{}, client.Options{Rand: rand.New(rand.NewPCG(3, 3))})
		start := time.Now()
		_, err := s.Acquire(context.Background(), clienttest.Request("op-a"))
		if !errors.Is(err, client.ErrUnreachable) || !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("acquire against a dead registry: %v, want ErrUnreachable wrapping the refused connection", err)
		}
		if took := time.Since(start); took > 30*time.Second {
			t.Fatalf("it took %s to give up", took)
		}
		if id, ok := s.Pending(clienttest.Resource); !ok || id == "" {
			t.Fatal("the request ID must stay pending: the registry may still have granted it")
		}
		t.Logf("gave up after %s: %v", time.Since(start), err)
	})
}

// TestLockAfterAWaitLongerThanTheTTL is the first-hour defect: a waiter
// queued longer than its own TTL used to get a lease whose local deadline
// (counted from the acquire's send) had already passed, so it could build
// no envelope and `fencegate lock` gave it up unused. The deadline now
// counts from the send plus the registry's ExpiresAfterMs, which has the
// wait inside it.
func TestLockAfterAWaitLongerThanTheTTL(t *testing.T) {
	for _, wait := range []time.Duration{11 * time.Second, 29 * time.Second, 70 * time.Second} {
		t.Run(wait.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { lockAfterWait(t, wait) })
		})
	}
}

func lockAfterWait(t *testing.T, wait time.Duration) {
	ctx := context.Background()
	reg, err := clienttest.NewRegistry(client.SystemClock{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	session := func(owner string, seed uint64) *client.Session {
		return client.NewSession(registry.Direct{Registry: reg.Registry, Owner: owner}, client.Options{Rand: rand.New(rand.NewPCG(seed, seed))})
	}
	holder, err := session(clienttest.OwnerA, 1).Acquire(ctx, clienttest.Request("op-a"))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(wait) // the holder renews all along
		_ = holder.ReleaseNoDrain(ctx)
	}()
	req := clienttest.Request("op-b")
	req.TTLMs = 5000
	l, err := session(clienttest.OwnerB, 2).Lock(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	defer l.ReleaseNoDrain(ctx)
	if _, err := l.Envelope(1, grant.Digest{1}); err != nil {
		t.Fatalf("after a %s wait, a 5 s lease refuses its first envelope: %v (state %s, deadline in %s)",
			wait, err, l.State(), time.Until(l.Deadline()))
	}
	if left := time.Until(l.Deadline()); left < 5*time.Second-client.ExpiryMarginDefault-50*time.Millisecond {
		t.Fatalf("after a %s wait the lease has %s before its local deadline, want about TTL − margin (%s)",
			wait, left, 5*time.Second-client.ExpiryMarginDefault)
	}
}

// TestLockKeepsItsPlaceInTheQueue: a waiter that joined first is served
// first however many long polls it took. B queues before C; each polls
// in 2 s chunks; A lets go at 2.5 s, just after B's first poll ended.
// Asking again with a fresh request ID (as Lock did before) put B behind
// C at 2 s, and C got the lease.
func TestLockKeepsItsPlaceInTheQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		reg, err := clienttest.NewRegistry(client.SystemClock{}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		session := func(owner string, seed uint64) *client.Session {
			return client.NewSession(registry.Direct{Registry: reg.Registry, Owner: owner},
				client.Options{Rand: rand.New(rand.NewPCG(seed, seed)), LockWaitChunk: 2 * time.Second})
		}
		holder, err := session(clienttest.OwnerA, 1).Acquire(ctx, clienttest.Request("op-a"))
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan string, 2)
		var wg sync.WaitGroup
		lock := func(owner string, seed uint64) {
			defer wg.Done()
			l, err := session(owner, seed).Lock(ctx, clienttest.Request("op-"+owner))
			if err != nil {
				got <- "error: " + err.Error()
				return
			}
			got <- owner
			time.Sleep(time.Second)
			_ = l.ReleaseNoDrain(ctx)
		}
		wg.Add(2)
		go lock(clienttest.OwnerB, 2)
		time.Sleep(1500 * time.Millisecond)
		go lock("worker-settlement-9", 3)
		time.Sleep(time.Second)
		_ = holder.ReleaseNoDrain(ctx)
		first, second := <-got, <-got
		wg.Wait()
		if first != clienttest.OwnerB || second != "worker-settlement-9" {
			t.Fatalf("served %s then %s, want %s (queued first) then worker-settlement-9", first, second, clienttest.OwnerB)
		}
	})
}
