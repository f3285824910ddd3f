package objgate

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/internal/stored"
)

// A manifest keeps its receipts short: every receipt it holds is an
// accept of its resource, so the resource, the outcome and the ID (the
// digest of the rest) are left out, and a receipt under the same grant
// as the one before it — the segments of one lease, the common case —
// gives only what differs:
//
//	{"fenceToken":F,"operationRoot":"sha256:…","operationId":"…","segmentSeq":S,"payloadDigest":"sha256:…","grant":"sha256:…","acceptedAt":"…","mode":"enforce"}
//	{"segmentSeq":S,"payloadDigest":"sha256:…","acceptedAt":"…"}
//
// The first receipt, and any whose fence, operation, grant or mode
// differ from the one before, take the long form; the parser accepts only
// this choice (it re-encodes what it read and compares).

// heldReceipt is a receipt with its entry in the manifest.
type heldReceipt struct {
	r     gate.Receipt
	entry []byte
}

// sameRun reports whether r may take the short form after prev.
func sameRun(prev *gate.Receipt, r gate.Receipt) bool {
	return prev != nil && prev.FenceToken == r.FenceToken && prev.OperationRoot == r.OperationRoot &&
		prev.OperationID == r.OperationID && prev.GrantDigest == r.GrantDigest && prev.Mode == r.Mode
}

// appendReceipt adds r after the held receipts rs, encoding its entry.
func appendReceipt(rs []heldReceipt, r gate.Receipt) []heldReceipt {
	var prev *gate.Receipt
	if len(rs) > 0 {
		prev = &rs[len(rs)-1].r
	}
	j := stored.FieldsOf(r)
	var buf [512]byte
	b := buf[:0]
	if sameRun(prev, r) {
		b = append(b, `{"segmentSeq":`...)
		b = strconv.AppendUint(b, j.SegmentSeq, 10)
	} else {
		b = append(b, `{"fenceToken":`...)
		b = strconv.AppendUint(b, j.FenceToken, 10)
		b = append(b, `,"operationRoot":`...)
		b = stored.AppendString(b, j.OperationRoot)
		b = append(b, `,"operationId":`...)
		b = stored.AppendString(b, j.OperationID)
		b = append(b, `,"segmentSeq":`...)
		b = strconv.AppendUint(b, j.SegmentSeq, 10)
	}
	b = append(b, `,"payloadDigest":`...)
	b = stored.AppendString(b, j.PayloadDigest)
	if !sameRun(prev, r) {
		b = append(b, `,"grant":`...)
		b = stored.AppendString(b, j.GrantDigest)
	}
	b = append(b, `,"acceptedAt":`...)
	b = stored.AppendString(b, j.AcceptedAt)
	if !sameRun(prev, r) {
		b = append(b, `,"mode":`...)
		b = stored.AppendString(b, j.Mode)
	}
	b = append(b, '}')
	return append(rs, heldReceipt{r: r, entry: bytes.Clone(b)})
}

// manifestEntry is an entry as decoded; the short form leaves the run's
// fields empty.
type manifestEntry struct {
	FenceToken    uint64 `json:"fenceToken"`
	OperationRoot string `json:"operationRoot"`
	OperationID   string `json:"operationId"`
	SegmentSeq    uint64 `json:"segmentSeq"`
	PayloadDigest string `json:"payloadDigest"`
	GrantDigest   string `json:"grant"`
	AcceptedAt    string `json:"acceptedAt"`
	Mode          string `json:"mode"`
}

// parseEntries turns decoded entries back into receipts of resource.
// The caller checks the bytes re-encode exactly.
func parseEntries(resource string, es []manifestEntry) ([]heldReceipt, error) {
	var rs []heldReceipt
	for i, e := range es {
		if e.FenceToken == 0 { // the short form: the run's fields from the one before
			if i == 0 {
				return nil, fmt.Errorf("%w: the first receipt is in the short form", ErrManifest)
			}
			p := rs[i-1].r
			e.FenceToken, e.OperationRoot, e.OperationID, e.GrantDigest, e.Mode = p.FenceToken, p.OperationRoot.String(),
				p.OperationID, p.GrantDigest.String(), string(p.Mode)
		}
		j := stored.Receipt{Resource: resource, FenceToken: e.FenceToken, OperationRoot: e.OperationRoot, OperationID: e.OperationID,
			SegmentSeq: e.SegmentSeq, PayloadDigest: e.PayloadDigest, GrantDigest: e.GrantDigest, AcceptedAt: e.AcceptedAt,
			Mode: e.Mode, Outcome: string(gate.Accepted)}
		r, err := j.Fields()
		if err != nil {
			return nil, fmt.Errorf("%w: receipt %d: %w", ErrManifest, i+1, err)
		}
		rs = appendReceipt(rs, r)
	}
	return rs, nil
}
