// Proves the hand-written receipt encoder writes exactly encoding/json's
// bytes for the wire form, over random receipts whose strings need
// escaping.
package gate

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/fencegate/fencegate/grant"
)

func TestAppendJSONMatchesJSONMarshal(t *testing.T) {
	anyString := rapid.OneOf(rapid.String(), rapid.StringMatching(`[a-z0-9/._-]{0,80}`),
		rapid.SampledFrom([]string{"", "<&>", "\"\\", "\u2028", "\xff"}))
	digest := rapid.Custom(func(t *rapid.T) (d grant.Digest) {
		copy(d[:], rapid.SliceOfN(rapid.Byte(), 32, 32).Draw(t, "digest"))
		return d
	})
	rapid.Check(t, func(t *rapid.T) {
		r := Receipt{Resource: anyString.Draw(t, "resource"), FenceToken: rapid.Uint64().Draw(t, "fence"),
			OperationRoot: digest.Draw(t, "root"), OperationID: anyString.Draw(t, "op"), SegmentSeq: rapid.Uint64().Draw(t, "seq"),
			PayloadDigest: digest.Draw(t, "payload"), GrantDigest: digest.Draw(t, "grant"),
			AcceptedAt: time.UnixMilli(rapid.Int64Range(0, 253402300799999).Draw(t, "ms")),
			Mode:       Mode(anyString.Draw(t, "mode")), Outcome: Outcome(anyString.Draw(t, "outcome"))}
		want, _ := json.Marshal(receiptJSON{ID: r.ID(), Resource: r.Resource, FenceToken: r.FenceToken,
			OperationRoot: r.OperationRoot.String(), OperationID: r.OperationID, SegmentSeq: r.SegmentSeq,
			PayloadDigest: r.PayloadDigest.String(), GrantDigest: r.GrantDigest.String(),
			AcceptedAt: r.AcceptedAt.UTC().Format(grant.TimeLayout), Mode: string(r.Mode), Outcome: string(r.Outcome)})
		if got := r.AppendJSON(nil); !bytes.Equal(got, want) {
			t.Fatalf("\n got %s\nwant %s", got, want)
		}
	})
}
