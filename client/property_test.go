// This file proves, over random schedules of time jumps (pauses), lost
// requests and lost answers, with two owners competing for one resource on
// a real registry: an envelope is only ever built while the registry holds
// that very grant; Ctx is live exactly while ownership is certain; Done is
// closed exactly when the lease ended. Illegal transitions would panic.
package client_test

import (
	"context"
	"fmt"
	mrand "math/rand/v2"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/testkit/clienttest"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

func TestPropertyNoEnvelopeWithoutRegistryHold(t *testing.T) {
	built := 0
	rapid.Check(t, noEnvelopeWithoutHold(t, 1, &built))
	if built == 0 {
		t.Error("no envelope was ever built: the property was never exercised")
	}
}

// TestCheckerCatchesClockDriftBeyondBound breaks the time assumption on
// purpose: the client's clock runs at half speed, far beyond any bounded
// rate error, and the lease is paused past its TTL. The same checker must
// catch the envelope built after the registry ended the lease (the gate's
// own clock would still reject it).
func TestCheckerCatchesClockDriftBeyondBound(t *testing.T) {
	f := clienttest.NewEnv(t, nil)
	s := client.NewSession(registry.Direct{Registry: f.Reg.Registry, Owner: clienttest.OwnerA},
		client.Options{Clock: driftClock{f.Clock, 0.5}, Manual: true, RenewFraction: 0.68})
	l, err := s.Acquire(f.Ctx, clienttest.Request("op"))
	if err != nil {
		t.Fatal(err)
	}
	// The client keeps its status proof fresh but, its clock crawling, never
	// gets round to renewing before the registry's TTL is over.
	for f.Clock.Now().Before(clienttest.T0.Add(9500 * time.Millisecond)) {
		f.Clock.Advance(500 * time.Millisecond)
		l.Tick(f.Ctx)
	}
	f.Clock.Advance(1500 * time.Millisecond) // registry: 11s, past the TTL; client: 5.5s
	var caught []string
	checkLease(func(format string, args ...any) { caught = append(caught, fmt.Sprintf(format, args...)) }, f, l)
	if len(caught) == 0 {
		t.Fatal("a client clock at half speed went unnoticed: the checker cannot fail")
	}
	t.Logf("caught as intended: %s", caught[0])
}

// driftClock runs at rate × the registry's clock, from T0.
type driftClock struct {
	base *clienttest.FakeClock
	rate float64
}

func (c driftClock) Now() time.Time {
	return clienttest.T0.Add(time.Duration(float64(c.base.Now().Sub(clienttest.T0)) * c.rate))
}

func (c driftClock) After(d time.Duration) <-chan time.Time {
	return c.base.After(time.Duration(float64(d) / c.rate))
}

// noEnvelopeWithoutHold is the property, for a client clock at rate.
func noEnvelopeWithoutHold(t *testing.T, rate float64, built *int) func(*rapid.T) {
	return func(rt *rapid.T) {
		f := clienttest.NewEnv(t, nil)
		var workers []*clienttest.Worker
		for i, owner := range []string{clienttest.OwnerA, clienttest.OwnerB} {
			w := &clienttest.Worker{Net: &clienttest.Lossy{Inner: registry.Direct{Registry: f.Reg.Registry, Owner: owner}}}
			w.S = client.NewSession(w.Net, client.Options{Clock: driftClock{f.Clock, rate},
				Rand: mrand.New(mrand.NewPCG(uint64(i), 1)), Manual: true})
			workers = append(workers, w)
		}
		leases := make([]*client.Lease, 2)
		faults := []clienttest.Fault{clienttest.Pass, clienttest.Pass, clienttest.DropRequest, clienttest.DropResponse}
		steps := rapid.IntRange(1, 60).Draw(rt, "steps")
		for step := 0; step < steps; step++ {
			i := rapid.IntRange(0, 1).Draw(rt, "worker")
			w := workers[i]
			fault := rapid.SampledFrom(faults).Draw(rt, "fault")
			w.Net.Fault = func(string, string) clienttest.Fault { return fault }
			ctx, cancel := context.WithCancel(f.Ctx)
			w.Net.After = func(string) { cancel() } // one try per step: no backoff sleeps on the fake clock
			f.Clock.Advance(time.Duration(rapid.IntRange(0, 4000).Draw(rt, "advanceMs")) * time.Millisecond)
			l := leases[i]
			switch {
			case l == nil || l.State().Terminal():
				if nl, err := w.S.Acquire(ctx, clienttest.Request("op")); err == nil {
					leases[i] = nl
				}
			case rapid.IntRange(0, 9).Draw(rt, "release") == 0:
				// At most one attempt now: the drain's wait and a lost
				// answer's retry happen on later Ticks.
				rctx, rcancel := context.WithCancel(ctx)
				rcancel()
				_ = l.Release(rctx)
			default:
				l.Tick(f.Ctx)
			}
			cancel()
			for _, l := range leases {
				if l != nil && checkLease(rt.Fatalf, f, l) {
					*built++
				}
			}
		}
	}
}

// checkLease checks the invariants of l now and reports whether an
// envelope could be built.
func checkLease(fail func(format string, args ...any), f *clienttest.Env, l *client.Lease) bool {
	st := l.State()
	if (l.Ctx().Err() == nil) != (st.Certain() && !l.Releasing()) {
		fail("state %s (releasing %v) with ctx err %v", st, l.Releasing(), l.Ctx().Err())
	}
	select {
	case <-l.Done():
		if !st.Terminal() {
			fail("Done closed in %s", st)
		}
	default:
		if st.Terminal() {
			fail("Done open in %s", st)
		}
	}
	if _, err := l.Envelope(1, gatetest.Payload("p")); err != nil {
		return false
	}
	is, err := f.Reg.Status(f.Ctx, l.Grant())
	if err != nil || is.Status.State != grant.StateHeld {
		fail("envelope built for lease %s (fence %d) while the registry says %v / %v",
			l.Grant().Lease, l.Grant().FenceToken, is.Status, err)
	}
	return true
}
