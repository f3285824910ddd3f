// This file proves the fence check is what stops a stale writer: a
// lease-only gate (status check, no fence) accepts the stale write that
// Decide rejects, so the fence tests above are able to fail.
package gate_test

import (
	"testing"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

// leaseOnly is the unsafe baseline: accept whenever the status says HELD
// and looks fresh by the gate's clock. It exists only in tests.
func leaseOnly(in gate.Input) bool {
	s := in.Verified.Status
	return s != nil && s.State == grant.StateHeld && in.Now.Add(in.StatusSkewMax).Before(s.ValidUntil)
}

func TestNegativeControlLeaseOnlyAcceptsStaleWriter(t *testing.T) {
	f := newFixture(t)
	// A got fence 5 and a status proof, then paused. Its lease expired, B
	// got fence 6 and wrote. The gate's clock lags beyond the skew bound,
	// so A's old proof still looks fresh when A wakes up and writes.
	stale := f.iss.Mutation(writerA(5), 1, "a's old result")
	f.iss.Now = f.iss.Now.Add(20 * time.Second)
	b := f.iss.Mutation(gateWriter("worker-a", 6, "op-b"), 1, "b's new result")

	st := held(0, 0, "")
	in := f.input(t, b, st, nil)
	d := gate.Decide(in)
	if d.Outcome != gate.Accepted {
		t.Fatalf("B: %v", d.Err)
	}
	in = f.input(t, stale, d.State, nil)
	in.Now = gateClockLagging(f)
	if !leaseOnly(in) {
		t.Fatal("negative control broken: lease-only should accept the stale writer")
	}
	if d := gate.Decide(in); d.Outcome == gate.Accepted || d.State.HighestFence != 6 {
		t.Fatalf("fenced gate accepted the stale writer: %+v", d)
	}
}

func gateWriter(owner string, fence uint64, op string) gatetest.Writer {
	return gatetest.Writer{Resource: res, Owner: owner, Lease: "lease-b", OperationID: op, Fence: fence}
}

// gateClockLagging is the issuer's original instant: 20 s behind.
func gateClockLagging(f *fixture) time.Time { return f.iss.Now.Add(-20 * time.Second) }
