// Proves the hand-written state encoders write exactly json.Marshal's
// bytes, over random values with strings that need escaping.
package stored_test

import (
	"encoding/json"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/internal/stored"
	"github.com/fencegate/fencegate/grant"
)

func anyString() *rapid.Generator[string] {
	return rapid.OneOf(rapid.String(), rapid.StringMatching(`[a-z0-9:/._-]{0,80}`), rapid.SampledFrom([]string{"", "<&>", "\"\\", "\u2028", "\xff"}))
}

func TestAppendMatchesJSONMarshal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := stored.State{Resource: anyString().Draw(t, "resource"), Mode: anyString().Draw(t, "mode"),
			HighestFence: rapid.Uint64().Draw(t, "hf"), Root: anyString().Draw(t, "root"), LastSegmentSeq: rapid.Uint64().Draw(t, "seq"),
			GrantDigest: anyString().Draw(t, "grant"), GrantIssuedAt: anyString().Draw(t, "issued"),
			MinPolicyGeneration: rapid.Uint64().Draw(t, "gen"), Paused: rapid.Bool().Draw(t, "paused"),
			PausedReason: anyString().Draw(t, "reason"), Floor: rapid.Uint64().Draw(t, "floor"), FloorAt: anyString().Draw(t, "floorAt")}
		want, _ := json.Marshal(s)
		if got := stored.Encode(s); string(got) != string(want) {
			t.Fatalf("state:\n got %s\nwant %s", got, want)
		}
	})
}

// TestAppendFenceStateMatches: AppendFenceState writes exactly what
// AppendState writes for FromState of the same state, over random states
// (zero and non-zero digests and instants, strings that need escaping,
// instants far from now).
func TestAppendFenceStateMatches(t *testing.T) {
	digest := func(t *rapid.T, label string) grant.Digest {
		var d grant.Digest
		if rapid.Bool().Draw(t, label+"-set") {
			copy(d[:], rapid.SliceOfN(rapid.Byte(), 32, 32).Draw(t, label))
		}
		return d
	}
	instant := func(t *rapid.T, label string) time.Time {
		if rapid.Bool().Draw(t, label+"-zero") {
			return time.Time{}
		}
		return time.UnixMilli(rapid.Int64Range(-70_000_000_000_000, 300_000_000_000_000).Draw(t, label)).
			In(time.FixedZone("z", rapid.IntRange(-50_000, 50_000).Draw(t, label+"-zone")))
	}
	rapid.Check(t, func(t *rapid.T) {
		s := gate.FenceState{Resource: anyString().Draw(t, "resource"), Mode: gate.Mode(anyString().Draw(t, "mode")),
			HighestFence: rapid.Uint64().Draw(t, "hf"), Root: digest(t, "root"), LastSegmentSeq: rapid.Uint64().Draw(t, "seq"),
			GrantDigest: digest(t, "grant"), GrantIssuedAt: instant(t, "issued"), MinPolicyGeneration: rapid.Uint64().Draw(t, "gen"),
			Paused: rapid.Bool().Draw(t, "paused"), PausedReason: anyString().Draw(t, "reason"), Floor: rapid.Uint64().Draw(t, "floor"),
			FloorAt: instant(t, "floorAt")}
		want := stored.AppendState(nil, stored.FromState(s))
		if got := stored.AppendFenceState(nil, s); string(got) != string(want) {
			t.Fatalf("state:\n got %s\nwant %s", got, want)
		}
	})
}
