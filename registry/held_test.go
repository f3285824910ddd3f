// Proves an acquire signs one message: a fresh grant (granted at once, or
// handed to a waiter by a release) carries its own HELD statement,
// heldUntil = min(issuedAt + StatusProofTTLMs, expiresAt − ClockSkewMaxMs),
// and comes without a status; a retry, a renewal and a status query still
// answer with a signed grantStatus.v1 about the very same grant bytes; and
// Config.SeparateStatus issues the earlier form for a rollout.
package registry_test

import (
	"bytes"
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/memstore"
)

func TestFreshGrantIsItsOwnHeldStatement(t *testing.T) {
	e := newEnv(t, nil)
	cfg := registry.DefaultConfig(epoch)
	for _, c := range []struct {
		ttlMs    uint64
		heldMs   int64 // heldUntil − issuedAt
		resource string
	}{
		{10_000, int64(cfg.StatusProofTTLMs), "held/long"},     // the status TTL binds
		{2000, 2000 - int64(cfg.ClockSkewMaxMs), "held/short"}, // expiry minus the skew bound binds
	} {
		r := req(c.resource, "r-"+c.resource[5:])
		r.TTLMs = c.ttlMs
		is := e.mustAcquire("worker-a", r)
		g := is.Grant
		if is.Status != nil || is.StatusProof != "" || !g.HeldStatement() {
			t.Fatalf("%s: a fresh grant came with a status or without a held statement: %+v", c.resource, is)
		}
		if got := g.HeldUntil.Sub(g.IssuedAt).Milliseconds(); got != c.heldMs {
			t.Fatalf("%s: heldUntil is issuedAt + %d ms, want %d", c.resource, got, c.heldMs)
		}
		if g.HeldUntil.After(g.ExpiresAt.Add(-time.Duration(cfg.ClockSkewMaxMs) * time.Millisecond)) {
			t.Fatalf("%s: heldUntil %s passes expiry minus the skew bound", c.resource, g.HeldUntil)
		}
		// A retry, a renewal and a status query answer about the same
		// grant bytes, each with a signed HELD status.
		e.clock.Advance(100 * time.Millisecond)
		again, err := e.reg.Acquire(e.ctx, "worker-a", r)
		if err != nil || !bytes.Equal(again.Grant.Encode(), g.Encode()) || again.GrantProof != is.GrantProof || again.Status == nil {
			t.Fatalf("%s: retry: %v %+v", c.resource, err, again)
		}
		e.checkProofs(again)
		rn, err := e.reg.Renew(e.ctx, "worker-a", c.resource, g.Lease)
		if err != nil || rn.Status == nil || rn.Status.State != grant.StateHeld || rn.Grant.Digest() != g.Digest() {
			t.Fatalf("%s: renew: %v %+v", c.resource, err, rn)
		}
		e.checkProofs(rn)
		st, err := e.reg.Status(e.ctx, g)
		if err != nil || st.Status == nil || st.Status.State != grant.StateHeld {
			t.Fatalf("%s: status: %v %+v", c.resource, err, st)
		}
	}
}

func TestSeparateStatusIssuesTheEarlierForm(t *testing.T) {
	e := newEnv(t, func(c *registry.Config) { c.SeparateStatus = true })
	is := e.mustAcquire("worker-a", req("held/old", "r-old"))
	if is.Grant.HeldStatement() || is.Status == nil || is.Status.State != grant.StateHeld {
		t.Fatalf("SeparateStatus: grant with a held statement %v, status %+v", is.Grant.HeldStatement(), is.Status)
	}
}

// TestHandedGrantIsItsOwnHeldStatement: a waiter handed the lease by a
// release (in the release's own write) gets its grant as fresh, without
// a status.
func TestHandedGrantIsItsOwnHeldStatement(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		k, v := testKey(t)
		reg, err := registry.New(memstore.New(), registry.DefaultConfig(epoch), clock.System{}, k)
		if err != nil {
			t.Fatal(err)
		}
		first, err := reg.Acquire(ctx, "holder", probeRequest("h-0", 0))
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			is, err := reg.Acquire(ctx, "waiter", probeRequest("w-0", 20_000))
			if err == nil && (is.Status != nil || !is.Grant.HeldStatement()) {
				t.Errorf("handed grant: status %+v, held statement %v", is.Status, is.Grant.HeldStatement())
			}
			if err == nil {
				err = v.Verify(is.Grant, is.GrantProof)
			}
			done <- err
		}()
		synctest.Wait()
		if err := reg.Release(ctx, "holder", "probe/x", first.Grant.Lease); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}
