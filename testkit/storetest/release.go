package storetest

// This file proves, over each store, that a release answered early
// (registry.Config.ReleaseEarly) moves no safety property: a successor's
// fence is above the released one whether the release's commit lands,
// races the next acquire of the same process, or is lost after the answer
// (the lease then ends at its TTL) — and, as the negative control, that a
// store committing without the compares lets a lost release's successor
// take the released fence again.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/testkit/fakeclock"
	"github.com/fencegate/fencegate/wire"
)

// RunRelease runs the release scenarios, durable and answered early.
func RunRelease(t *testing.T, newStore NewStore) {
	for _, early := range []bool{false, true} {
		name := map[bool]string{false: "Durable", true: "Early"}[early]
		t.Run(name+"/NextAcquireOfTheSameProcess", func(t *testing.T) { testReleaseThenAcquire(t, newStore(t), early) })
		t.Run(name+"/TwoRegistriesNeverTwoHolders", func(t *testing.T) { testTwoRegistriesWith(t, newStore(t), early) })
		t.Run(name+"/LostReleaseEndsByTTL", func(t *testing.T) {
			if fence, next := lostRelease(t, newStore(t), early, false); next <= fence {
				t.Fatalf("successor fence %d at or below the released %d", next, fence)
			}
		})
	}
	// The negative control: the same story over a store that compares
	// nothing gives the successor the released fence.
	t.Run("Early/LostReleaseWithoutCompares", func(t *testing.T) {
		if fence, next := lostRelease(t, newStore(t), true, true); next > fence {
			t.Fatalf("without compares the successor still got fence %d above %d: the control shows nothing", next, fence)
		}
	})
}

// NewRegistryWith is NewRegistry with the config's early release set.
func NewRegistryWith(t testing.TB, s registry.Store, clk clock.Clock, early bool) *registry.Registry {
	t.Helper()
	k, err := grant.GenerateKey(grant.AlgEd25519, "storetest", bytes.NewReader(bytes.Repeat([]byte{1}, 32)))
	if err != nil {
		t.Fatal(err)
	}
	if clk == nil {
		clk = clock.System{}
	}
	cfg := registry.DefaultConfig(1)
	cfg.WaitPollMsMax = 50
	cfg.ReleaseEarly = early
	r, err := registry.New(s, cfg, clk, k)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := r.FlushReleases(fctx); err != nil {
			t.Errorf("releases still in flight: %v", err)
		}
	})
	return r
}

// testReleaseThenAcquire: a release, then at once an acquire of another
// owner through the same registry, which decides on the released record
// while the release's commit may be in flight: never busy, the fence one
// above, and the released grant's status RELEASED.
func testReleaseThenAcquire(t *testing.T, s registry.Store, early bool) {
	reg := NewRegistryWith(t, s, nil, early)
	is, err := reg.Acquire(ctx, "owner-0", acq("next/1", "r0", 0))
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 40; i++ {
		if err := reg.Release(ctx, fmt.Sprint("owner-", i-1), "next/1", is.Grant.Lease); err != nil {
			t.Fatal(err)
		}
		if i%8 == 0 { // the released grant, as a gate would ask about it
			st, err := reg.Status(ctx, is.Grant)
			if err != nil || st.Status.State != grant.StateReleased {
				t.Fatalf("status after release %d: %v %v", i, st.Status, err)
			}
		}
		next, err := reg.Acquire(ctx, fmt.Sprint("owner-", i), acq("next/1", fmt.Sprint("r", i), 0))
		if err != nil {
			t.Fatalf("acquire %d after a release: %v (releases lost %d)", i, err, reg.ReleasesLost())
		}
		if next.Grant.FenceToken != is.Grant.FenceToken+1 {
			t.Fatalf("acquire %d: fence %d after %d", i, next.Grant.FenceToken, is.Grant.FenceToken)
		}
		is = next
	}
}

// testTwoRegistriesWith is testTwoRegistries with both registries'
// releases durable or answered early.
func testTwoRegistriesWith(t *testing.T, s registry.Store, early bool) {
	testTwoRegistriesOf(t, []*registry.Registry{NewRegistryWith(t, s, nil, early), NewRegistryWith(t, s, nil, early)})
}

// dropping loses the next commit that releases a lease, when armed: it
// applies nothing and answers an error of unknown outcome, as a store
// that crashed after the answer was sent.
type dropping struct {
	registry.Store
	armed   atomic.Bool
	dropped atomic.Int32
}

func (d *dropping) Commit(ctx context.Context, w registry.Write) (registry.CommitResult, error) {
	if w.Record != nil && w.Record.Holder == nil && d.armed.CompareAndSwap(true, false) {
		d.dropped.Add(1)
		return registry.CommitResult{}, errors.New("storetest: the release's commit was lost")
	}
	return d.Store.Commit(ctx, w)
}

// compareless is a store that compares nothing: each write is made to
// match what is stored before it is committed (what the issue forbids).
type compareless struct{ registry.Store }

func (c compareless) Commit(ctx context.Context, w registry.Write) (registry.CommitResult, error) {
	keys := make([]lockstate.RequestKey, len(w.Requests))
	for i, rw := range w.Requests {
		keys[i] = rw.Key
	}
	cur, err := c.Store.Read(ctx, w.Resource, keys)
	if err != nil {
		return registry.CommitResult{}, err
	}
	if w.Resource != "" {
		w.RecordRev, w.RecordWas, w.RecordWasRaw = cur.RecordRev, cur.Record, cur.RecordRaw
	}
	w.SettingsRev, w.SettingsWas = cur.SettingsRev, nil
	w.Requests = append([]registry.RequestWrite(nil), w.Requests...)
	for i := range w.Requests {
		w.Requests[i].ModRev = cur.Requests[i].ModRev
	}
	return c.Store.Commit(ctx, w)
}

// lostRelease: registry B last saw the resource free at fence 1; A takes
// it (fence 2) and releases it, and that commit is lost after the answer
// (early) or with an error of unknown outcome (durable). B's next acquire,
// decided on its stale record, must fail its compare and find the lease
// still held; once the lease's TTL and lock-delay pass, B gets the next
// fence. It returns the released fence and B's.
func lostRelease(t *testing.T, s registry.Store, early, noCompares bool) (fence, next uint64) {
	clk := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var under registry.Store = s
	if noCompares {
		under = compareless{s}
	}
	drop := &dropping{Store: under}
	a, b := NewRegistryWith(t, drop, clk, early), NewRegistryWith(t, drop, clk, early)
	warm, err := b.Acquire(ctx, "b", acq("lost-release/1", "b0", 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Release(ctx, "b", "lost-release/1", warm.Grant.Lease); err != nil {
		t.Fatal(err)
	}
	flush, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := b.FlushReleases(flush); err != nil { // another replica reads it once it landed
		t.Fatal(err)
	}
	held, err := a.Acquire(ctx, "a", acq("lost-release/1", "a1", 0))
	if err != nil {
		t.Fatal(err)
	}
	drop.armed.Store(true)
	err = a.Release(ctx, "a", "lost-release/1", held.Grant.Lease)
	switch {
	case early && err != nil:
		t.Fatalf("early release: want its answer before the commit, got %v", err)
	case !early && !errors.Is(err, wire.ErrUnavailable):
		t.Fatalf("durable release whose commit was lost: want ErrUnavailable, got %v", err)
	}
	if err := a.FlushReleases(flush); err != nil {
		t.Fatal(err)
	}
	if drop.dropped.Load() != 1 {
		t.Fatalf("%d commits dropped, want the release's", drop.dropped.Load())
	}
	if early && a.ReleasesLost() != 1 {
		t.Fatalf("ReleasesLost %d, want 1", a.ReleasesLost())
	}
	is, err := b.Acquire(ctx, "b", acq("lost-release/1", "b1", 0))
	if err == nil {
		return held.Grant.FenceToken, is.Grant.FenceToken // only without compares
	}
	if !errors.Is(err, wire.ErrBusy) {
		t.Fatalf("acquire while the lost release's lease lives: want busy, got %v", err)
	}
	clk.Advance(time.Duration(held.Grant.TTLMs+registry.DefaultConfig(1).LockDelayMs+1) * time.Millisecond)
	if is, err = b.Acquire(ctx, "b", acq("lost-release/1", "b2", 0)); err != nil {
		t.Fatalf("acquire after the lost release's TTL: %v", err)
	}
	return held.Grant.FenceToken, is.Grant.FenceToken
}
