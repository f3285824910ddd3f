// This file proves a renewal whose answer is late or never comes (the
// call hangs) puts the lease in OWNERSHIP_UNKNOWN with its context
// cancelled, judged by the injected clock, and that only a timely HELD
// answer about the same grant brings it back.
package client_test

import (
	"context"
	mrand "math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/testkit/clienttest"
	"github.com/fencegate/fencegate/wire"
)

// slowRenew answers renewals only after the clock moved by delay (late),
// or, with hang, never: until the call's context ends.
type slowRenew struct {
	client.Transport
	clock *clienttest.FakeClock
	delay time.Duration
	slow  atomic.Bool
	hang  atomic.Bool
}

func (s *slowRenew) Renew(ctx context.Context, resource, lease string) (wire.Issued, error) {
	if s.hang.Load() {
		<-ctx.Done()
		return wire.Issued{}, ctx.Err()
	}
	is, err := s.Transport.Renew(ctx, resource, lease)
	if s.slow.Load() {
		s.clock.Advance(s.delay)
	}
	return is, err
}

func slowSession(f *clienttest.Env, seed uint64) (*slowRenew, *client.Session, *clienttest.Recorder) {
	tr := &slowRenew{Transport: registry.Direct{Registry: f.Reg.Registry, Owner: clienttest.OwnerA}, clock: f.Clock,
		delay: client.CallTimeoutDefault + time.Millisecond}
	rec := &clienttest.Recorder{}
	s := client.NewSession(tr, client.Options{Clock: f.Clock, Rand: mrand.New(mrand.NewPCG(seed, seed)), Manual: true, OnTransition: rec.Add})
	return tr, s, rec
}

func TestLateRenewalIsUnknown(t *testing.T) {
	f := clienttest.NewEnv(t, nil)
	tr, s, rec := slowSession(f, 50)
	l, err := s.Acquire(f.Ctx, clienttest.Request("op-1"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := l.Ctx()
	tr.slow.Store(true)
	f.TickUntil(l, 250*time.Millisecond, func() bool { return l.State() != client.StateHeld })
	if l.State() != client.StateUnknown || ctx.Err() == nil {
		t.Fatalf("after a late renewal: %s, ctx %v", l.State(), ctx.Err())
	}
	tr.slow.Store(false)
	f.Clock.Advance(client.QueryIntervalDefault)
	if st := l.Tick(f.Ctx); st != client.StateHeld {
		t.Fatalf("timely confirmation: %s, want HELD", st)
	}
	got := clienttest.Compact(rec.Lines())
	want := []string{
		"REQUESTED -AcquireOK-> HELD", "RENEWING -RenewLate-> OWNERSHIP_UNKNOWN",
		"OWNERSHIP_UNKNOWN -QueryUnavailable-> OWNERSHIP_UNKNOWN", // the immediate query was late too
		"OWNERSHIP_UNKNOWN -QueryHeld-> HELD",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("transitions\n%q\nwant\n%q", got, want)
	}
}

func TestHangingRenewalTimesOutByInjectedClock(t *testing.T) {
	f := clienttest.NewEnv(t, nil)
	tr, s, _ := slowSession(f, 51)
	l, err := s.Acquire(f.Ctx, clienttest.Request("op-1"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := l.Ctx()
	tr.hang.Store(true)
	for l.State() == client.StateHeld {
		done := make(chan struct{})
		go func() { l.Tick(f.Ctx); close(done) }()
		for waiting := true; waiting; {
			select {
			case <-done:
				waiting = false
			case <-time.After(200 * time.Microsecond):
				f.Clock.Advance(100 * time.Millisecond) // only the fake clock ends the hung call
			}
		}
	}
	if l.State() != client.StateUnknown || ctx.Err() == nil {
		t.Fatalf("after a hung renewal: %s, ctx %v", l.State(), ctx.Err())
	}
}
