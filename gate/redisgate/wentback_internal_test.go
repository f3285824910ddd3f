// This file proves the store-went-back rule on its own: every way a
// state can be behind one seen is named, a state forward in every way
// (or equal) is not behind, restore never lowers highestFence, the
// floor, the policy generation or the mode, and pauses only in enforce;
// and the cache's memory of what it saw only moves forward, survives
// forget, and never leaves a state behind it to decide on.
package redisgate

import (
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/gate"
)

func TestBehind(t *testing.T) {
	t0 := time.Date(2026, 7, 19, 10, 0, 0, 0, time.UTC)
	seen := gate.FenceState{Resource: "r", Mode: gate.ModeEnforce, HighestFence: 5, LastSegmentSeq: 3, Floor: 4, FloorAt: t0, MinPolicyGeneration: 2}
	with := func(f func(*gate.FenceState)) gate.FenceState { st := seen; f(&st); return st }
	for _, row := range []struct {
		name string
		st   gate.FenceState
		want string // a word of the reason; "" for not behind
	}{
		{"equal", seen, ""},
		{"higher fence, first segment", with(func(s *gate.FenceState) { s.HighestFence, s.LastSegmentSeq = 6, 1 }), ""},
		{"next segment", with(func(s *gate.FenceState) { s.LastSegmentSeq = 4 }), ""},
		{"paused", with(func(s *gate.FenceState) { s.Paused = true }), ""},
		{"resumed", with(func(s *gate.FenceState) { s.Floor, s.FloorAt = 9, t0.Add(time.Hour) }), ""},
		{"lower fence", with(func(s *gate.FenceState) { s.HighestFence, s.LastSegmentSeq = 4, 9 }), "highestFence 4"},
		{"earlier segment", with(func(s *gate.FenceState) { s.LastSegmentSeq = 2 }), "segment 2"},
		{"lower floor", with(func(s *gate.FenceState) { s.Floor = 3 }), "floor 3"},
		{"lower policy generation", with(func(s *gate.FenceState) { s.MinPolicyGeneration = 1 }), "policy generation 1"},
		{"back to shadow", with(func(s *gate.FenceState) { s.Mode = gate.ModeShadow }), "shadow mode"},
	} {
		got := behind(row.st, seen)
		if (got == "") != (row.want == "") || !strings.Contains(got, row.want) {
			t.Errorf("%s: behind = %q, want %q", row.name, got, row.want)
		}
	}
}

func TestRestoreNeverLowers(t *testing.T) {
	t0 := time.Date(2026, 7, 19, 10, 0, 0, 0, time.UTC)
	seen := gate.FenceState{Resource: "r", Mode: gate.ModeEnforce, HighestFence: 5, LastSegmentSeq: 3, Floor: 4, FloorAt: t0, MinPolicyGeneration: 2}
	for _, st := range []gate.FenceState{
		{Resource: "r", Mode: gate.ModeShadow}, // gone: what decodeState gives for no key
		{Resource: "r", Mode: gate.ModeEnforce, HighestFence: 5, LastSegmentSeq: 1},
		{Resource: "r", Mode: gate.ModeEnforce, HighestFence: 7, LastSegmentSeq: 1, Floor: 6, FloorAt: t0.Add(time.Hour), MinPolicyGeneration: 3},
	} {
		got := restore(st, seen, "why")
		if got.HighestFence != max(st.HighestFence, seen.HighestFence) || got.Floor != max(st.Floor, seen.Floor) ||
			got.MinPolicyGeneration != max(st.MinPolicyGeneration, seen.MinPolicyGeneration) || got.Mode != gate.ModeEnforce {
			t.Errorf("restore(%+v) = %+v", st, got)
		}
		if behind(got, seen) != "" || behind(got, st) != "" {
			t.Errorf("restore(%+v) = %+v is behind what it restores", st, got)
		}
		if !got.Paused || !strings.Contains(got.PausedReason, "FENCE_REGRESSION") {
			t.Errorf("restore(%+v) did not pause in enforce mode: %+v", st, got)
		}
	}
	if got := restore(gate.FenceState{Resource: "r", Mode: gate.ModeShadow}, gate.FenceState{Resource: "r", Mode: gate.ModeShadow, HighestFence: 2}, "why"); got.Paused || got.HighestFence != 2 {
		t.Errorf("shadow: %+v, want highestFence 2 and no pause", got)
	}
}

// TestCacheNeverHoldsAStateBehindSeen: a late put of an older state (two
// writes of one gate answered out of order) keeps the seen state and
// drops the state to decide on, so that a store gone back to exactly
// those bytes is read, and checked, not compared-and-set on blindly.
func TestCacheNeverHoldsAStateBehindSeen(t *testing.T) {
	c := newStateCache(4)
	older := gate.FenceState{Resource: "r", Mode: gate.ModeEnforce, HighestFence: 5, LastSegmentSeq: 1}
	newer := older
	newer.LastSegmentSeq = 2
	c.put("r", "s2", newer)
	c.put("r", "s1", older)
	if _, ok := c.get("r"); ok {
		t.Fatal("the cache holds a state behind the one it saw")
	}
	if seen, ok := c.seen("r"); !ok || seen.LastSegmentSeq != 2 {
		t.Fatalf("seen %+v %v, want segment 2", seen, ok)
	}
	c.put("r", "", gate.FenceState{Resource: "r", Mode: gate.ModeEnforce}) // gone
	if _, ok := c.get("r"); ok {
		t.Fatal("the cache holds no state where it saw one")
	}
	c.forget("r")
	if _, ok := c.seen("r"); !ok {
		t.Fatal("forget dropped what was seen")
	}
	c.put("r", "s3", gate.FenceState{Resource: "r", Mode: gate.ModeEnforce, HighestFence: 6, LastSegmentSeq: 1})
	if snap, ok := c.get("r"); !ok || snap.blob != "s3" {
		t.Fatalf("a state ahead of the one seen is not held: %+v %v", snap, ok)
	}
}
