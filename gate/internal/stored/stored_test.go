// Proves the stored form keeps every gate.FenceState field, and that decoding
// refuses what a store should never hand back.
package stored_test

import (
	"testing"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/internal/stored"
	"github.com/fencegate/fencegate/grant"
)

func TestRoundTrip(t *testing.T) {
	at := time.Date(2026, 7, 19, 10, 0, 0, 123e6, time.UTC)
	st := gate.FenceState{Resource: "a/b", Mode: gate.ModeShadow, HighestFence: 9, Root: grant.OperationRoot("a/b", "op"),
		LastSegmentSeq: 3, GrantDigest: grant.Digest{1}, GrantIssuedAt: at, MinPolicyGeneration: 4, Paused: true,
		PausedReason: "why", Floor: 20, FloorAt: at.Add(time.Second)}
	var js stored.State
	if err := stored.Decode(stored.Encode(stored.FromState(st)), &js); err != nil {
		t.Fatal(err)
	}
	back, err := js.GateState()
	if err != nil || back != st {
		t.Fatalf("state round trip:\n %+v\n %+v (%v)", st, back, err)
	}
	if back, _ := (stored.State{Resource: "x", Mode: "enforce"}).GateState(); !back.GrantIssuedAt.IsZero() || !back.GrantDigest.IsZero() {
		t.Fatalf("unknown fields must stay zero: %+v", back)
	}
}

func TestDecodeIsStrict(t *testing.T) {
	var js stored.State
	for _, b := range []string{`{"resource":"a","mode":"enforce","extra":1}`, `{"resource":"a"} {}`, `not json`} {
		if err := stored.Decode([]byte(b), &js); err == nil {
			t.Errorf("%s decoded", b)
		}
	}
	for _, j := range []stored.State{{Resource: "a", Mode: "off"}, {Resource: "a", Mode: "enforce", Root: "md5:00"},
		{Resource: "a", Mode: "enforce", FloorAt: "yesterday"}} {
		if _, err := j.GateState(); err == nil {
			t.Errorf("%+v accepted", j)
		}
	}
}
