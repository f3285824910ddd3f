// This file proves, in virtual time (testing/synctest: the real shell, its
// goroutine and its timers, the real registry), that Release drains: with
// an envelope whose answer never came, the registry keeps the lease until
// the envelope's status proof can no longer be accepted, and frees it
// then; a settled envelope, or ReleaseNoDrain, releases at once. Without
// the drain (the negative control) the registry frees the lease while the
// envelope's proof is still fresh.
package client_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/testkit/clienttest"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

// drainWorld is a registry and one worker's session on the bubble's clock.
type drainWorld struct {
	t   *testing.T
	ctx context.Context
	reg *clienttest.Registry
	s   *client.Session
}

func newDrainWorld(t *testing.T) *drainWorld {
	reg, err := clienttest.NewRegistry(client.SystemClock{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := client.NewSession(registry.Direct{Registry: reg.Registry, Owner: clienttest.OwnerA},
		client.Options{Rand: rand.New(rand.NewPCG(5, 5))})
	return &drainWorld{t: t, ctx: context.Background(), reg: reg, s: s}
}

func (w *drainWorld) acquire() *client.Lease {
	l, err := w.s.Acquire(w.ctx, clienttest.Request("op-drain"))
	if err != nil {
		w.t.Fatal(err)
	}
	return l
}

// registryState is what the registry says about l's grant now.
func (w *drainWorld) registryState(l *client.Lease) grant.State {
	is, err := w.reg.Status(w.ctx, l.Grant())
	if err != nil {
		w.t.Fatal(err)
	}
	return is.Status.State
}

// envelope builds segment seq of l and returns it with the instant its
// HELD evidence lasts until: its status proof's validUntil, or, with no
// status (a fresh grant), the grant's own heldUntil.
func (w *drainWorld) envelope(l *client.Lease, seq uint64, payload string) (gate.Mutation, time.Time) {
	m, err := l.Envelope(seq, gatetest.Payload(payload))
	if err != nil {
		w.t.Fatal(err)
	}
	if len(m.Status) == 0 {
		g, err := grant.ParseGrant(m.Grant)
		if err != nil || !g.HeldStatement() {
			w.t.Fatalf("an envelope without status and without a held statement: %v", err)
		}
		return m, g.HeldUntil
	}
	st, err := grant.ParseStatus(m.Status)
	if err != nil {
		w.t.Fatal(err)
	}
	return m, st.ValidUntil
}

// releaseIn starts release in the background and returns a channel that
// delivers its error.
func releaseIn(release func(context.Context) error) <-chan error {
	done := make(chan error, 1)
	go func() { done <- release(context.Background()) }()
	return done
}

func TestReleaseDrainsAnUnsettledEnvelope(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newDrainWorld(t)
		l := w.acquire()
		_, validUntil := w.envelope(l, 1, "a1") // sent; its answer never comes
		until := l.DrainUntil()
		if want := validUntil.Add(client.DrainMarginDefault); !until.Equal(want) {
			t.Fatalf("DrainUntil %s, want the proof's validUntil + DrainMargin = %s", until, want)
		}
		done := releaseIn(l.Release)
		synctest.Wait()
		if l.Ctx().Err() == nil || !l.Releasing() {
			t.Fatal("ownership must stop being certain as soon as Release begins")
		}
		if _, err := l.Envelope(2, gatetest.Payload("a2")); err == nil {
			t.Fatal("an envelope was built while releasing")
		}
		time.Sleep(time.Until(until) - time.Millisecond)
		synctest.Wait()
		if s := w.registryState(l); s != grant.StateHeld {
			t.Fatalf("the registry says %s before the drain ended: a copy of the envelope could land after the release", s)
		}
		time.Sleep(2 * time.Millisecond)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if s := w.registryState(l); s != grant.StateReleased || l.State() != client.StateReleased {
			t.Fatalf("after the drain: registry %s, lease %s", s, l.State())
		}
	})
}

func TestReleaseWithSettledEnvelopesIsImmediate(t *testing.T) {
	for _, c := range []struct {
		name    string
		settle  gate.Outcome // "" leaves the envelope unsettled
		release func(*client.Lease) func(context.Context) error
	}{
		{"settled accepted", gate.Accepted, func(l *client.Lease) func(context.Context) error { return l.Release }},
		{"settled stale", gate.StaleOwner, func(l *client.Lease) func(context.Context) error { return l.Release }},
		{"no drain", "", func(l *client.Lease) func(context.Context) error { return l.ReleaseNoDrain }},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newDrainWorld(t)
				l := w.acquire()
				if _, err := l.Envelope(1, gatetest.Payload("a1")); err != nil {
					t.Fatal(err)
				}
				if c.settle != "" {
					l.Settle(1, c.settle)
				}
				start := time.Now()
				if err := <-releaseIn(c.release(l)); err != nil {
					t.Fatal(err)
				}
				if elapsed := time.Since(start); elapsed != 0 {
					t.Fatalf("release took %s of virtual time, want none", elapsed)
				}
				if s := w.registryState(l); s != grant.StateReleased {
					t.Fatalf("registry says %s", s)
				}
			})
		})
	}
}

// TestNonFinalAnswerStillDrains: a SEGMENT_GAP answer does not settle
// the envelope (the missing segment may arrive and a copy of this one be
// accepted after it), so Release still waits for its proof.
func TestNonFinalAnswerStillDrains(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newDrainWorld(t)
		l := w.acquire()
		if _, err := l.Envelope(2, gatetest.Payload("a2")); err != nil {
			t.Fatal(err)
		}
		l.Settle(2, gate.SegmentGap)
		until := l.DrainUntil()
		if until.IsZero() {
			t.Fatal("a SEGMENT_GAP answer settled the envelope")
		}
		start := time.Now()
		if err := <-releaseIn(l.Release); err != nil {
			t.Fatal(err)
		}
		if time.Now().Before(until) {
			t.Fatalf("released after %s, before the drain ended at %s", time.Since(start), until)
		}
	})
}

// TestNoDrainFreesTheLeaseWhileTheProofIsFresh is the negative control:
// released without the drain, the registry frees the lease while the
// unsettled envelope's proof still looks fresh to a gate, which is the
// window in which a copy of it could be accepted after the release.
func TestNoDrainFreesTheLeaseWhileTheProofIsFresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newDrainWorld(t)
		l := w.acquire()
		_, validUntil := w.envelope(l, 1, "a1")
		if err := l.ReleaseNoDrain(w.ctx); err != nil {
			t.Fatal(err)
		}
		fresh := time.Now().Add(500 * time.Millisecond).Before(validUntil) // the gate's freshness test, default skew bound
		if s := w.registryState(l); s != grant.StateReleased || !fresh {
			t.Fatalf("registry %s, proof fresh %v: the control shows nothing", s, fresh)
		}
	})
}

// TestRefreshedEnvelopeExtendsTheDrain: an envelope rebuilt with the
// lease's newer status proof (Lease.Refresh, for a write that waited in a
// queue) can be accepted until that proof lapses, so the release's drain
// waits for it, not for the proof the envelope was first built with.
func TestRefreshedEnvelopeExtendsTheDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newDrainWorld(t)
		l := w.acquire()
		m, first := w.envelope(l, 1, "a1")
		var refreshed *grant.Status
		for range 100 { // the lease's own loop renews its proof
			time.Sleep(100 * time.Millisecond)
			synctest.Wait()
			again, err := l.Refresh(m)
			if err != nil {
				continue // ErrProofStale until the loop refreshes
			}
			if again.FenceToken != m.FenceToken || again.SegmentSeq != m.SegmentSeq || again.PayloadDigest != m.PayloadDigest {
				t.Fatalf("refresh changed the write: %+v", again)
			}
			if st, _ := grant.ParseStatus(again.Status); st != nil && st.ValidUntil.After(first) {
				refreshed = st
				break
			}
		}
		if refreshed == nil {
			t.Fatal("the lease never renewed its status proof")
		}
		if want := refreshed.ValidUntil.Add(client.DrainMarginDefault); !l.DrainUntil().Equal(want) {
			t.Fatalf("DrainUntil %s, want the refreshed proof's validUntil + DrainMargin = %s", l.DrainUntil(), want)
		}
		other := m
		other.OperationID = "op-other"
		if _, err := l.Refresh(other); !errors.Is(err, client.ErrForeignEnvelope) {
			t.Fatalf("refresh of another operation's envelope: %v, want ErrForeignEnvelope", err)
		}
		if err := <-releaseIn(l.Release); err != nil {
			t.Fatal(err)
		}
		if time.Now().Before(refreshed.ValidUntil) {
			t.Fatalf("released at %s, while the refreshed proof (valid until %s) could still be accepted", time.Now(), refreshed.ValidUntil)
		}
	})
}
