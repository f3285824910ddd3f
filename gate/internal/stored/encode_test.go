// Proves the hand-written state encoder writes exactly json.Marshal's
// bytes, over random values with strings that need escaping.
package stored_test

import (
	"encoding/json"
	"testing"

	"pgregory.net/rapid"

	"github.com/fencegate/fencegate/gate/internal/stored"
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
