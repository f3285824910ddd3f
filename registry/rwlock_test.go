// This file proves the read/write lock's shell over the memory store:
// readers share and carry the last writer's fence on NAME/_read, a writer
// waits for them, a reader's lease renews, releases and answers status
// under its own resource, a downgrade keeps the fence and holds a second
// reader back until the write lease's HELD statements have expired (in
// virtual time), and many goroutines of readers and writers on two
// replicas keep every rule, checked from the store's committed records;
// the negative control (a downgrade in two steps) lets a writer in.
package registry_test

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/memstore"
	"github.com/fencegate/fencegate/testkit/rwstress"
	"github.com/fencegate/fencegate/wire"
)

func rwReq(id string, read bool, waitMs uint64) wire.AcquireRequest {
	r := wire.AcquireRequest{Resource: "rw/doc", OperationID: "op-" + id, OperationClass: "settle", RequestID: id, TTLMs: 10_000, WaitMs: waitMs}
	if read {
		r.Mode = wire.ModeRead
	}
	return r
}

func TestReadWriteLockShell(t *testing.T) {
	e := newEnv(t, nil)
	w := e.mustAcquire("w", rwReq("w1", false, 0))
	if err := e.reg.Release(e.ctx, "w", w.Grant.Resource, w.Grant.Lease); err != nil {
		t.Fatal(err)
	}
	a := e.mustAcquire("a", rwReq("a1", true, 0))
	b := e.mustAcquire("b", rwReq("b1", true, 0))
	for _, is := range []wire.Issued{a, b} {
		if is.Grant.Resource != "rw/doc/_read" || is.Grant.FenceToken != w.Grant.FenceToken {
			t.Fatalf("reader grant on %s fence %d, want rw/doc/_read fence %d", is.Grant.Resource, is.Grant.FenceToken, w.Grant.FenceToken)
		}
	}
	if _, err := e.reg.Acquire(e.ctx, "x", rwReq("x1", false, 0)); !errors.Is(err, wire.ErrBusy) {
		t.Fatalf("writer beside readers: %v", err)
	}
	if _, err := e.reg.Renew(e.ctx, "a", a.Grant.Resource, a.Grant.Lease); err != nil {
		t.Fatalf("renew a reader: %v", err)
	}
	st, err := e.reg.Status(e.ctx, b.Grant)
	if err != nil || st.Status.State != grant.StateHeld {
		t.Fatalf("status of a reader: %v %+v", err, st.Status)
	}
	v, err := e.reg.LockStatus(e.ctx, "rw/doc")
	if err != nil || len(v.Readers) != 2 || v.Holder != nil {
		t.Fatalf("lock status: %v %+v", err, v)
	}
	for _, is := range []wire.Issued{a, b} {
		if err := e.reg.Release(e.ctx, is.Grant.Owner, is.Grant.Resource, is.Grant.Lease); err != nil {
			t.Fatalf("release a reader: %v", err)
		}
	}
	st, err = e.reg.Status(e.ctx, a.Grant)
	if err != nil || st.Status.State != grant.StateReleased {
		t.Fatalf("status of a released reader: %v %+v", err, st.Status)
	}
	x := e.mustAcquire("x", rwReq("x2", false, 0))
	if x.Grant.FenceToken <= w.Grant.FenceToken {
		t.Fatalf("writer after readers: fence %d not above %d", x.Grant.FenceToken, w.Grant.FenceToken)
	}
}

// TestDowngradeHoldsReadersBack: after a downgrade, a second reader
// waits until every HELD statement issued for the write lease has
// expired (the downgrade + StatusProofTTLMs + ClockSkewMaxMs); a queued
// writer stays queued. With ReadersFromMs cleared by hand in the store
// (the mutant), the reader is admitted at once — the check fails.
func TestDowngradeHoldsReadersBack(t *testing.T) {
	for _, mutant := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			store := memstore.New()
			k, _ := testKey(t)
			cfg := registry.DefaultConfig(epoch)
			reg, err := registry.New(store, cfg, clock.System{}, k)
			if err != nil {
				t.Fatal(err)
			}
			ctx := t.Context()
			w, err := reg.Acquire(ctx, "w", rwReq("w1", false, 0))
			if err != nil {
				t.Fatal(err)
			}
			d, err := reg.Downgrade(ctx, "w", wire.DowngradeRequest{Resource: "rw/doc", Lease: w.Grant.Lease, RequestID: "w1-read"})
			if err != nil || d.Grant.FenceToken != w.Grant.FenceToken || d.Grant.Resource != "rw/doc/_read" {
				t.Fatalf("downgrade: %v %+v", err, d.Grant)
			}
			downAt := time.Now()
			if again, err := reg.Downgrade(ctx, "w", wire.DowngradeRequest{Resource: "rw/doc", Lease: w.Grant.Lease, RequestID: "w1-read"}); err != nil || again.Grant.Lease != d.Grant.Lease {
				t.Fatalf("downgrade retry: %v", err)
			}
			if mutant {
				clearReadersFrom(t, store)
			}
			r, err := reg.Acquire(ctx, "r", rwReq("r1", true, 10_000))
			if err != nil {
				t.Fatal(err)
			}
			waited := time.Since(downAt)
			want := time.Duration(cfg.StatusProofTTLMs+cfg.ClockSkewMaxMs) * time.Millisecond
			if r.Grant.FenceToken != w.Grant.FenceToken {
				t.Fatalf("reader fence %d, want %d", r.Grant.FenceToken, w.Grant.FenceToken)
			}
			switch {
			case !mutant && waited < want:
				t.Fatalf("a second reader was admitted %v after the downgrade, before its statements expired (%v)", waited, want)
			case mutant && waited >= want:
				t.Fatalf("mutant: the reader still waited %v: the check cannot fail", waited)
			}
			t.Logf("mutant %t: the second reader waited %v (statements valid for %v)", mutant, waited, want)
		})
	}
}

// clearReadersFrom rewrites rw/doc's record without its ReadersFromMs.
func clearReadersFrom(t *testing.T, store registry.Store) {
	s, err := store.Read(t.Context(), "rw/doc", nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := s.Record.Clone()
	rec.ReadersFromMs = 0
	res, err := store.Commit(t.Context(), registry.Write{Resource: "rw/doc", RecordRev: s.RecordRev, RecordWas: s.Record, Record: rec, SettingsRev: s.SettingsRev})
	if err != nil || !res.OK {
		t.Fatalf("mutant write: %v %+v", err, res)
	}
}

func TestReadWriteLockConcurrent(t *testing.T) {
	store := memstore.New()
	regs := rwstress.Registries(t, store, 2)
	res := rwstress.Run(t, store, regs, rwstress.Options{Workers: 12, Duration: 2 * time.Second, WaitMs: 15_000, HoldMax: 2 * time.Millisecond})
	t.Logf("reads %d (shared %d), writes %d, downgrades %d, unserved %d, versions %d", res.Reads, res.Shared, res.Writes, res.Downgrades, res.Unserved, res.Versions)
	for _, v := range res.Violations {
		t.Error(v)
	}
	if res.Unserved > 0 {
		t.Errorf("%d waits ran out", res.Unserved)
	}
	if res.Reads < 50 || res.Writes < 20 || res.Shared == 0 || res.Downgrades == 0 || res.Versions < 100 {
		t.Errorf("vacuous: %+v", res)
	}
}

// TestReadWriteLockConcurrentCatchTwoStepDowngrade is the negative
// control: the same run, each downgrade a release then a read acquire,
// lets a queued writer in between.
func TestReadWriteLockConcurrentCatchTwoStepDowngrade(t *testing.T) {
	store := memstore.New()
	regs := rwstress.Registries(t, store, 2)
	res := rwstress.Run(t, store, regs, rwstress.Options{Workers: 12, Duration: 2 * time.Second, WaitMs: 15_000, HoldMax: 2 * time.Millisecond, TwoStepDowngrade: true})
	t.Logf("two-step: downgrades %d, violations %d", res.Downgrades, len(res.Violations))
	for _, v := range res.Violations {
		if !strings.Contains(v, "got in between") {
			t.Errorf("unexpected violation: %s", v)
		}
	}
	if len(res.Violations) == 0 {
		t.Fatal("the two-step downgrade never let a writer in: the check cannot fail")
	}
	t.Log(res.Violations[0])
}
