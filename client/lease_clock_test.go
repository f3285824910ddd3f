// This file proves the lease clock of issue 42 on the shell, with a real
// registry: at every TTL the registry accepts, from its minimum to its
// maximum with the edges between the margins, a healthy lease renews
// before its local deadline and is never OWNERSHIP_UNKNOWN (a 2 s lease
// used to stop renewing after its fourth refresh, its State HELD and its
// Ctx live seconds past the deadline); a TTL shorter than the client's
// margins allow is refused before anything is sent, naming the shortest
// that works; and the loss is reported at the deadline itself — by State
// at once, and by Ctx through a timer on the deadline even while a
// renewal hangs.
package client_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/testkit/clienttest"
	"github.com/fencegate/fencegate/wire"
)

// countingTransport counts the calls that reach the registry.
type countingTransport struct {
	client.Transport
	calls atomic.Int64
}

func (c *countingTransport) Acquire(ctx context.Context, r wire.AcquireRequest) (wire.Issued, error) {
	c.calls.Add(1)
	return c.Transport.Acquire(ctx, r)
}

func TestRegistryMinimumIsTheClientMinimum(t *testing.T) {
	if got := client.TTLMin(client.Options{}); got != registry.TTLMsMinDefault*time.Millisecond {
		t.Fatalf("the client's shortest TTL with its defaults is %s, the registry's minimum %d ms: they must agree",
			got, registry.TTLMsMinDefault)
	}
}

// acceptedTTLs are the registry's accepted range with its ends and the
// edges between the default margins: the minimum (2 s = ExpiryMargin +
// 4 × 250 ms), where a proof stops being capped by the expiry (TTL =
// StatusProofTTL + skew bound = 2.5 s), where refreshes start to fall
// before the renewal (about 4 s), the default, and the maximum.
var acceptedTTLs = []time.Duration{
	2000 * time.Millisecond, 2001 * time.Millisecond, 2200 * time.Millisecond, 2499 * time.Millisecond,
	2500 * time.Millisecond, 2501 * time.Millisecond, 3 * time.Second, 4 * time.Second, 4001 * time.Millisecond,
	7 * time.Second, 15 * time.Second, 60 * time.Second, 600 * time.Second,
}

func TestLeaseRenewsBeforeItsDeadlineAtEveryAcceptedTTL(t *testing.T) {
	for _, ttl := range acceptedTTLs {
		t.Run(ttl.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { renewsForLives(t, ttl, 3) })
		})
	}
}

// renewsForLives holds a lease of ttl on a healthy registry for lives
// TTLs, sampling it often: it must stay HELD or RENEWING with its
// deadline ahead and its context live, renewing as it goes.
func renewsForLives(t *testing.T, ttl time.Duration, lives int) {
	reg, err := clienttest.NewRegistry(client.SystemClock{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var unknown, renewals int
	s := client.NewSession(registry.Direct{Registry: reg.Registry, Owner: clienttest.OwnerA}, client.Options{
		Rand: rand.New(rand.NewPCG(uint64(ttl), 1)),
		OnTransition: func(_ string, from, to client.LeaseState, ev client.LeaseEvent) {
			mu.Lock()
			defer mu.Unlock()
			if to == client.StateUnknown {
				unknown++
			}
			if ev == "RenewOK" {
				renewals++
			}
		},
	})
	r := clienttest.Request("op-clock")
	r.TTLMs = uint64(ttl.Milliseconds())
	l, err := s.Acquire(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { // also on failure: the bubble's loop must end
		rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := l.ReleaseNoDrain(rctx); err != nil {
			t.Error(err)
		}
	}()
	ctx := l.Ctx()
	step := ttl / 40
	for end := time.Now().Add(time.Duration(lives) * ttl); time.Now().Before(end); time.Sleep(step) {
		if st := l.State(); !st.Certain() || !time.Now().Before(l.Deadline()) || ctx.Err() != nil {
			t.Fatalf("%s into a %s lease: %s, deadline %s ahead, ctx %v", time.Since(end.Add(-time.Duration(lives)*ttl)),
				ttl, st, time.Until(l.Deadline()), ctx.Err())
		}
	}
	mu.Lock()
	u, n := unknown, renewals
	mu.Unlock()
	if u != 0 || n < 2*lives {
		t.Fatalf("%s lease over %d TTLs: %d times OWNERSHIP_UNKNOWN, %d renewals", ttl, lives, u, n)
	}
}

func TestTTLBelowTheMarginsIsRefusedBeforeAnyCall(t *testing.T) {
	f := clienttest.NewEnv(t, nil)
	tr := &countingTransport{Transport: registry.Direct{Registry: f.Reg.Registry, Owner: clienttest.OwnerA}}
	for _, c := range []struct {
		o    client.Options
		ttl  time.Duration
		want string
	}{
		{client.Options{}, 1999 * time.Millisecond, "at least 2s"},
		{client.Options{}, time.Second, "at least 2s"},
		{client.Options{ExpiryMargin: 2 * time.Second}, 2500 * time.Millisecond, "at least 3s"},
		{client.Options{ProofMargin: time.Second}, 2500 * time.Millisecond, "at least 3s"},
	} {
		c.o.Clock, c.o.Manual = f.Clock, true
		r := clienttest.Request("op-short")
		r.TTLMs = uint64(c.ttl.Milliseconds())
		_, err := client.NewSession(tr, c.o).Acquire(f.Ctx, r)
		var se *client.SettingsError
		if !errors.As(err, &se) || se.Want != c.want || !errors.Is(err, wire.ErrTTLOutOfRange) {
			t.Errorf("TTL %s with %+v: %v, want a refusal naming %q", c.ttl, c.o, err, c.want)
		}
	}
	if n := tr.calls.Load(); n != 0 {
		t.Fatalf("%d acquires reached the registry: a refused TTL must be refused before anything is sent", n)
	}
}

// hangingRenew never answers its first renewal: it says it got it, then
// waits for the call's context. Later ones pass.
type hangingRenew struct {
	client.Transport
	got  chan struct{}
	once *sync.Once
}

func (h hangingRenew) Renew(ctx context.Context, resource, lease string) (wire.Issued, error) {
	hang := false
	h.once.Do(func() { hang = true })
	if !hang {
		return h.Transport.Renew(ctx, resource, lease)
	}
	h.got <- struct{}{}
	<-ctx.Done()
	return wire.Issued{}, ctx.Err()
}

// TestDeadlineTimerWhileRenewing: the loop sends a renewal late (a
// process that stalled), whose timeout would end after the deadline; the
// renewal hangs. At the deadline, before the call times out, State reads
// OWNERSHIP_UNKNOWN and the timer on the deadline cancels Ctx.
func TestDeadlineTimerWhileRenewing(t *testing.T) {
	f := clienttest.NewEnv(t, nil)
	hang := hangingRenew{registry.Direct{Registry: f.Reg.Registry, Owner: clienttest.OwnerA}, make(chan struct{}, 1), &sync.Once{}}
	s := client.NewSession(hang,
		client.Options{Clock: f.Clock, Rand: rand.New(rand.NewPCG(3, 3)), Manual: true})
	r := clienttest.Request("op-hang")
	r.TTLMs = 2000 // local life 1 s, calls time out after 250 ms
	l, err := s.Acquire(f.Ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	deadline, ctx := l.Deadline(), l.Ctx()
	f.Clock.Advance(deadline.Sub(f.Clock.Now()) - 100*time.Millisecond) // renewal long due, not sent: the loop stalled
	ticked := make(chan client.LeaseState)
	go func() { ticked <- l.Tick(f.Ctx) }() // sends the renewal, which hangs for its 250 ms
	<-hang.got
	f.Clock.Advance(100 * time.Millisecond) // the deadline; the renewal's timeout is 150 ms away
	if st := l.State(); st != client.StateUnknown {
		t.Fatalf("at the deadline with a renewal in flight: State %s", st)
	}
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Ctx still live at the deadline: no timer on the deadline while the renewal was in flight")
	}
	select {
	case st := <-ticked:
		t.Fatalf("Tick returned (%s) before the renewal's timeout", st)
	default:
	}
	f.Clock.Advance(150 * time.Millisecond) // the renewal times out; the query that follows finds the grant HELD
	if st := <-ticked; st != client.StateHeld || l.Ctx() == ctx || l.Ctx().Err() != nil {
		t.Fatalf("after the hung renewal and a query: %s, ctx %v", st, l.Ctx().Err())
	}
}

// TestStateAndCtxAtTheDeadlineWithoutATick: a lease driven by hand
// (Options.Manual, no loop) reports the loss at the deadline even if
// nobody ticks it.
func TestStateAndCtxAtTheDeadlineWithoutATick(t *testing.T) {
	f := clienttest.NewEnv(t, nil)
	w := f.Worker(clienttest.OwnerA, 4, true)
	l, err := w.S.Acquire(f.Ctx, clienttest.Request("op-idle"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := l.Ctx()
	f.Clock.Advance(l.Deadline().Sub(f.Clock.Now()) - time.Millisecond)
	if l.State() != client.StateHeld || ctx.Err() != nil {
		t.Fatalf("a millisecond before the deadline: %s, ctx %v", l.State(), ctx.Err())
	}
	f.Clock.Advance(time.Millisecond)
	if st := l.State(); st != client.StateUnknown || l.Ctx().Err() == nil || ctx.Err() == nil {
		t.Fatalf("at the deadline: %s, ctx %v", st, ctx.Err())
	}
	if st := l.Tick(f.Ctx); st != client.StateHeld || l.Ctx() == ctx || l.Ctx().Err() != nil {
		t.Fatalf("the registry still holds it: %s after the query, ctx %v", st, l.Ctx().Err())
	}
	if l.Fence() != l.Grant().FenceToken || l.Fence() == 0 {
		t.Fatalf("Fence %d, grant's fence %d", l.Fence(), l.Grant().FenceToken)
	}
}
