// This file proves the operator controls end to end over the memory store:
// a revoked epoch's grants report REVOKED with no proofs and free their
// resource, floors and policy generations only rise and show in the next
// grant, and a forged or altered grant learns nothing from Status.
package registry_test

import (
	"errors"
	"testing"
	"time"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/wire"
)

func TestRevokedEpochReportsRevokedWithoutProofs(t *testing.T) {
	e := newEnv(t, nil)
	a := e.mustAcquire("worker-a", req("inv/1", "a1"))
	line, err := e.reg.RevokeEpochsBelow(e.ctx, epoch+1)
	if err != nil || line != epoch+1 {
		t.Fatalf("revoke: %d %v", line, err)
	}
	if line, _ := e.reg.RevokeEpochsBelow(e.ctx, 2); line != epoch+1 {
		t.Fatalf("revocation lowered to %d", line)
	}
	st, err := e.reg.Status(e.ctx, a.Grant)
	if err != nil || st.Status.State != grant.StateRevoked || st.GrantProof != "" || st.StatusProof != "" {
		t.Fatalf("revoked grant: %+v %v", st, err)
	}
	q, err := e.reg.QueryRequest(e.ctx, "worker-a", "a1")
	if err != nil || q.Status.State != grant.StateRevoked || q.StatusProof != "" {
		t.Fatalf("query revoked: %+v %v", q, err)
	}
	if _, err := e.reg.Renew(e.ctx, "worker-a", "inv/1", a.Grant.Lease); !errors.Is(err, wire.ErrEpochRevoked) {
		t.Fatalf("renew: %v", err)
	}
	// This registry signs under the revoked epoch: it may issue nothing.
	if _, err := e.reg.Acquire(e.ctx, "worker-b", req("inv/1", "b1")); !errors.Is(err, wire.ErrEpochRevoked) {
		t.Fatalf("acquire under revoked epoch: %v", err)
	}
	// A registry of the next epoch on the same store grants at once.
	k, _ := testKey(t)
	cfg := registry.DefaultConfig(epoch + 1)
	next, err := registry.New(e.store, cfg, e.clock, k)
	if err != nil {
		t.Fatal(err)
	}
	b, err := next.Acquire(e.ctx, "worker-b", req("inv/1", "b1"))
	if err != nil || b.Grant.FenceToken != a.Grant.FenceToken+1 || b.Grant.IssuerEpoch != epoch+1 {
		t.Fatalf("next epoch: %+v %v", b.Grant, err)
	}
}

func TestFloorAndPolicyShowInNextGrant(t *testing.T) {
	e := newEnv(t, nil)
	a := e.mustAcquire("worker-a", req("inv/1", "a1"))
	if err := e.reg.Release(e.ctx, "worker-a", "inv/1", a.Grant.Lease); err != nil {
		t.Fatal(err)
	}
	info, err := e.reg.RaiseFloor(e.ctx, "inv/1", 500)
	if err != nil || info.Floor != 500 || info.Revision == 0 {
		t.Fatalf("raise floor: %+v %v", info, err)
	}
	if info, _ := e.reg.RaiseFloor(e.ctx, "inv/1", 3); info.Floor != 500 {
		t.Fatalf("floor lowered to %d", info.Floor)
	}
	if _, err := e.reg.SetPolicyGeneration(e.ctx, "inv/1", 12); err != nil {
		t.Fatal(err)
	}
	if _, err := e.reg.SetPolicyGeneration(e.ctx, "inv/1", 11); !errors.Is(err, wire.ErrInvalid) {
		t.Fatalf("policy lowered: %v", err)
	}
	b := e.mustAcquire("worker-b", req("inv/1", "b1"))
	if b.Grant.FenceToken != 501 || b.Grant.PolicyGeneration != 12 {
		t.Fatalf("grant after floor 500 / policy 12: fence %d policy %d", b.Grant.FenceToken, b.Grant.PolicyGeneration)
	}
	info, err = e.reg.Resource(e.ctx, "inv/1")
	if err != nil || info.HighestFence != 501 || info.HolderLease != b.Grant.Lease {
		t.Fatalf("resource: %+v %v", info, err)
	}
}

func TestStatusRejectsForgedGrant(t *testing.T) {
	e := newEnv(t, nil)
	a := e.mustAcquire("worker-a", req("inv/1", "a1"))
	forged := *a.Grant
	forged.FenceToken = 1 << 40
	if _, err := e.reg.Status(e.ctx, &forged); !errors.Is(err, wire.ErrNotFound) {
		t.Fatalf("forged fence: %v", err)
	}
	other := *a.Grant
	other.Resource = "inv/2"
	other.OperationRoot = grant.OperationRoot("inv/2", "op-a1")
	if _, err := e.reg.Status(e.ctx, &other); !errors.Is(err, wire.ErrNotFound) {
		t.Fatalf("cross-resource grant: %v", err)
	}
}

func TestLimitsEnforced(t *testing.T) {
	e := newEnv(t, func(c *registry.Config) { c.WaitersPerResourceMax = 1 })
	short := req("inv/1", "s")
	short.TTLMs = 10
	if _, err := e.reg.Acquire(e.ctx, "worker-a", short); !errors.Is(err, wire.ErrTTLOutOfRange) {
		t.Fatalf("ttl 10ms: %v", err)
	}
	bad := req("Inv/1", "x")
	if _, err := e.reg.Acquire(e.ctx, "worker-a", bad); !errors.Is(err, wire.ErrInvalid) || wire.CodeOf(err) != "INVALID" {
		t.Fatalf("non-canonical resource: %v", err)
	}
	def := req("inv/1", "d")
	def.TTLMs = 0
	a := e.mustAcquire("worker-a", def)
	if a.Grant.TTLMs != e.reg.Config().TTLMsDefault {
		t.Fatalf("default ttl %d", a.Grant.TTLMs)
	}
	// One waiter fits; the second is refused; the first times out by the
	// registry clock (the fake clock is moved past its deadline).
	done := make(chan error, 1)
	go func() {
		w := req("inv/1", "w1")
		w.WaitMs = 1000
		_, err := e.reg.Acquire(e.ctx, "worker-b", w)
		done <- err
	}()
	waitWaiters(t, e, "inv/1", 1)
	w2 := req("inv/1", "w2")
	w2.WaitMs = 1000
	if _, err := e.reg.Acquire(e.ctx, "worker-c", w2); !errors.Is(err, wire.ErrWaitersFull) {
		t.Fatalf("second waiter: %v", err)
	}
	e.clock.Advance(1001 * time.Millisecond)
	if err := <-done; !errors.Is(err, wire.ErrWaitTimeout) {
		t.Fatalf("wait: %v", err)
	}
	waitWaiters(t, e, "inv/1", 1) // its ticket keeps its place for WaiterGraceMs, for the request to ask again
	e.clock.Advance(time.Duration(e.reg.Config().WaiterGraceMs) * time.Millisecond)
	waitWaiters(t, e, "inv/1", 0)
}

func waitWaiters(t *testing.T, e *env, resource string, n int) {
	t.Helper()
	for i := 0; i < 10_000; i++ {
		info, err := e.reg.Resource(e.ctx, resource)
		if err != nil {
			t.Fatal(err)
		}
		if info.Waiters == n {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("never %d waiters", n)
}

func TestRetentionForgetsEndedRequests(t *testing.T) {
	e := newEnv(t, nil)
	a := e.mustAcquire("worker-a", req("inv/1", "a1"))
	if err := e.reg.Release(e.ctx, "worker-a", "inv/1", a.Grant.Lease); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Duration(e.reg.Config().RequestRetentionMs-1) * time.Millisecond)
	if q, err := e.reg.QueryRequest(e.ctx, "worker-a", "a1"); err != nil || q.Status.State != grant.StateReleased {
		t.Fatalf("inside retention: %v", err)
	}
	e.clock.Advance(time.Millisecond)
	if _, err := e.reg.QueryRequest(e.ctx, "worker-a", "a1"); !errors.Is(err, wire.ErrNotFound) {
		t.Fatalf("past retention: %v", err)
	}
	// The request ID may now be reused; it gets a new grant with a new
	// backend revision (the old entry is deleted, not overwritten).
	b := e.mustAcquire("worker-a", req("inv/1", "a1"))
	if b.Grant.FenceToken != 2 || b.Grant.BackendRevision <= a.Grant.BackendRevision {
		t.Fatalf("reuse after retention: %+v", b.Grant)
	}
}
