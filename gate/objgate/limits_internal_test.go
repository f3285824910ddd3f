// This file proves the read limits fit the largest legitimate objects (a
// manifest and a batch at their worst: the longest resource name and
// operation IDs, sixteen receipts in the long form, 64 KiB inline), that
// format 1's parser accepts only the bytes format 1 wrote, and that a
// receipt batch holding what no batch of its name can is refused.
package objgate

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/internal/stored"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

func parserGate(t *testing.T) *Gate {
	g, err := open(context.Background(), Config{Client: NopAPI{}, Bucket: "b", Policy: gate.Policy{Verifier: gatetest.NewIssuer("limits").Verifier}}, false)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestWorstCaseObjectsFitTheLimits(t *testing.T) {
	g := parserGate(t)
	res := strings.Repeat("a", grant.ResourceBytesMax)
	at := time.Date(2026, 7, 19, 10, 0, 1, 0, time.UTC)
	h := g.newHeld(res, gate.ModeEnforce)
	for i := 1; i <= ManifestReceiptsMax; i++ {
		op := fmt.Sprintf("%0128d", i) // every receipt in the long form
		r := gate.Receipt{Resource: res, FenceToken: uint64(1<<62 + i), OperationRoot: grant.OperationRoot(res, op), OperationID: op,
			SegmentSeq: 1<<62 + 1, PayloadDigest: sha256.Sum256([]byte(op)), GrantDigest: sha256.Sum256([]byte("g" + op)),
			AcceptedAt: at, Mode: gate.ModeShadow, Outcome: gate.Accepted}
		h.receipts = appendReceipt(h.receipts, r)
		h.st.HighestFence, h.st.LastSegmentSeq, h.st.Root, h.st.GrantDigest = r.FenceToken, r.SegmentSeq, r.OperationRoot, r.GrantDigest
	}
	h.st.GrantIssuedAt, h.st.FloorAt, h.st.Floor, h.st.MinPolicyGeneration = at, at, 1<<62, 1<<62
	h.st.Paused, h.st.PausedReason = true, strings.Repeat("x", 200)
	h.version, h.tag = 1<<62, newTag()
	h.inline = make([]byte, InlineBytesMax)
	m, b := h.encode(), encodeBatch(h.receipts)
	t.Logf("manifest %d bytes (limit %d); batch %d bytes (limit %d)", len(m), ManifestBytesMax, len(b), BatchBytesMax)
	if len(m) > ManifestBytesMax || len(b) > BatchBytesMax {
		t.Fatal("a legitimate manifest or batch is over its read limit")
	}
	if _, err := g.parseManifest(res, m); err != nil {
		t.Fatal(err)
	}
	last := h.receipts[len(h.receipts)-1].r
	if _, err := parseBatch(b, res, seqName(last.FenceToken, last.SegmentSeq)); err != nil {
		t.Fatal(err)
	}
}

func TestFormat1ParserIsStrict(t *testing.T) {
	g := parserGate(t)
	const res = "obj/v1"
	canon := string(stored.Encode(manifestV1{Version: 3, State: stored.FromState(gate.FenceState{Resource: res, Mode: gate.ModeEnforce})}))
	if _, err := g.parseManifest(res, []byte(canon)); err != nil {
		t.Fatalf("format 1 as written refused: %v", err)
	}
	for name, v := range map[string]string{
		"re-cased field":   strings.Replace(canon, `"version":3`, `"Version":3`, 1),
		"repeated field":   strings.Replace(canon, `"version":3`, `"version":9,"version":3`, 1),
		"space":            strings.Replace(canon, `{"version"`, "{ \n\t\"version\"", 1),
		"trailing newline": canon + "\n",
	} {
		if _, err := g.parseManifest(res, []byte(v)); !errors.Is(err, ErrManifest) {
			t.Errorf("%s: %v, want ErrManifest", name, err)
		}
	}
}

func TestBatchHoldsOnlyWhatItsNameAllows(t *testing.T) {
	const res = "obj/batch"
	at := time.Date(2026, 7, 19, 10, 0, 1, 0, time.UTC)
	mk := func(resource string, seq uint64, out gate.Outcome) heldReceipt {
		return heldReceipt{r: gate.Receipt{Resource: resource, FenceToken: 4, OperationRoot: grant.OperationRoot(resource, "op"), OperationID: "op",
			SegmentSeq: seq, PayloadDigest: sha256.Sum256([]byte{byte(seq)}), GrantDigest: sha256.Sum256([]byte("g")), AcceptedAt: at,
			Mode: gate.ModeEnforce, Outcome: out}}
	}
	good := []heldReceipt{mk(res, 1, gate.Accepted), mk(res, 2, gate.Accepted)}
	if rs, err := parseBatch(encodeBatch(good), res, seqName(4, 2)); err != nil || len(rs) != 2 {
		t.Fatalf("a genuine batch: %d receipts, %v", len(rs), err)
	}
	for name, c := range map[string]struct {
		rs   []heldReceipt
		name string
	}{
		"another resource's receipt": {[]heldReceipt{mk(res, 1, gate.Accepted), mk("obj/other", 2, gate.Accepted)}, seqName(4, 2)},
		"not an accept":              {[]heldReceipt{mk(res, 1, gate.Accepted), mk(res, 2, gate.Quarantined)}, seqName(4, 2)},
		"out of order":               {[]heldReceipt{mk(res, 2, gate.Accepted), mk(res, 1, gate.Accepted)}, seqName(4, 1)},
		"named after another":        {good, seqName(4, 3)},
	} {
		if _, err := parseBatch(encodeBatch(c.rs), res, c.name); !errors.Is(err, ErrReceiptBatch) {
			t.Errorf("%s: %v, want ErrReceiptBatch", name, err)
		}
	}
}
