package objgate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/internal/jsonappend"
	"github.com/fencegate/fencegate/grant"
)

// A manifest keeps its receipts in gate's JSON form (gate.Receipt's
// MarshalJSON), and short where it can: a receipt under the same grant
// as the one before it — the segments of one lease, the common case —
// gives only what differs:
//
//	{"id":"sha256:…","resource":"…","fenceToken":F,…,"mode":"enforce","outcome":"ACCEPTED"}
//	{"segmentSeq":S,"payloadDigest":"sha256:…","acceptedAt":"…"}
//
// The first receipt, and any whose fence, operation, grant or mode
// differ from the one before, take the whole form; the parser accepts
// only this choice (it re-encodes what it read and compares). Format 2
// wrote the whole form without id, resource and outcome
// (manifest_legacy.go reads it).

// heldReceipt is a receipt with its entry in the manifest.
type heldReceipt struct {
	r     gate.Receipt
	entry []byte
}

// shortEntry is the short form: the fields a receipt in a run does not
// share with the one before.
type shortEntry struct {
	SegmentSeq    uint64 `json:"segmentSeq"`
	PayloadDigest string `json:"payloadDigest"`
	AcceptedAt    string `json:"acceptedAt"`
}

// sameRun reports whether r may take the short form after prev.
func sameRun(prev *gate.Receipt, r gate.Receipt) bool {
	return prev != nil && prev.FenceToken == r.FenceToken && prev.OperationRoot == r.OperationRoot &&
		prev.OperationID == r.OperationID && prev.GrantDigest == r.GrantDigest && prev.Mode == r.Mode &&
		prev.Resource == r.Resource && prev.Outcome == r.Outcome
}

// appendReceipt adds r after the held receipts rs, encoding its entry.
func appendReceipt(rs []heldReceipt, r gate.Receipt) []heldReceipt {
	var prev *gate.Receipt
	if len(rs) > 0 {
		prev = &rs[len(rs)-1].r
	}
	var buf [512]byte
	b := buf[:0]
	if sameRun(prev, r) {
		b = jsonappend.Uint(b, '{', "segmentSeq", r.SegmentSeq)
		b = jsonappend.Str(b, ',', "payloadDigest", r.PayloadDigest.String())
		b = append(r.AcceptedAt.UTC().AppendFormat(append(jsonappend.Name(b, ',', "acceptedAt"), '"'), grant.TimeLayout), '"', '}')
	} else {
		b = r.AppendJSON(b)
	}
	return append(rs, heldReceipt{r: r, entry: bytes.Clone(b)})
}

// parseEntries turns a format 3 manifest's entries back into receipts.
// The caller checks the bytes re-encode exactly.
func parseEntries(es []json.RawMessage) ([]heldReceipt, error) {
	var rs []heldReceipt
	for i, e := range es {
		var r gate.Receipt
		var err error
		if bytes.HasPrefix(e, []byte(`{"id":`)) {
			r, err = gate.DecodeReceipt(e)
		} else if i == 0 {
			err = fmt.Errorf("the first receipt is in the short form")
		} else {
			r, err = continueRun(rs[i-1].r, e)
		}
		if err != nil { // the store's bytes, not a mutation: no gate outcome (%v)
			return nil, fmt.Errorf("%w: receipt %d: %v", ErrManifest, i+1, err)
		}
		rs = appendReceipt(rs, r)
	}
	return rs, nil
}

// continueRun reads a short entry: prev's receipt with the fields the
// entry gives. A plain decode: the manifest's canonical check refuses a
// field given twice or re-cased.
func continueRun(prev gate.Receipt, e []byte) (gate.Receipt, error) {
	var s shortEntry
	if err := json.Unmarshal(e, &s); err != nil {
		return prev, err
	}
	return withSegment(prev, s)
}

// withSegment is prev with s's segment, payload digest and instant.
func withSegment(prev gate.Receipt, s shortEntry) (gate.Receipt, error) {
	r := prev
	if s.SegmentSeq == 0 || s.SegmentSeq > gate.CounterMax {
		return r, fmt.Errorf("segmentSeq %d outside 1..%d", s.SegmentSeq, uint64(gate.CounterMax))
	}
	r.SegmentSeq = s.SegmentSeq
	var err error
	if r.PayloadDigest, err = grant.ParseDigest(s.PayloadDigest); err != nil {
		return r, fmt.Errorf("payloadDigest: %w", err)
	}
	t, err := time.Parse(grant.TimeLayout, s.AcceptedAt)
	if err != nil || t.Format(grant.TimeLayout) != s.AcceptedAt {
		return r, fmt.Errorf("acceptedAt %q: want an instant like %s", s.AcceptedAt, grant.TimeLayout)
	}
	r.AcceptedAt = t.UTC()
	return r, nil
}
