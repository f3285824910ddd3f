package gate

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"

	"github.com/fencegate/fencegate/grant"
)

// Receipt is the resource's record that one segment was accepted. It is
// written in the same transaction as the business change and the fence
// state, is never updated or deleted, and is what a MUTATION_UNKNOWN
// recovery finds by operation ID.
type Receipt struct {
	Resource      string
	FenceToken    uint64
	OperationRoot grant.Digest
	OperationID   string
	SegmentSeq    uint64
	PayloadDigest grant.Digest
	GrantDigest   grant.Digest
	AcceptedAt    time.Time // gate clock, UTC, millisecond precision
	Mode          Mode      // the resource's mode when accepted
	Outcome       Outcome   // ACCEPTED for every stored receipt
}

// receiptDomain separates receipt digests from every other hash.
const receiptDomain = "fencegate/receipt/v1\x00"

// Encode returns the receipt's canonical bytes: one "name: value" line per
// field in a fixed order. It is on every accept's path, so it appends
// rather than formats (receiptEncodingFmt in the tests pins the bytes).
func (r *Receipt) Encode() []byte {
	return r.appendEncoding(make([]byte, 0, 512))
}

func (r *Receipt) appendEncoding(b []byte) []byte {
	digest := func(b []byte, name string, d grant.Digest) []byte {
		return append(hex.AppendEncode(append(append(b, name...), ": sha256:"...), d[:]), '\n')
	}
	line := func(b []byte, name, v string) []byte {
		return append(append(append(append(b, name...), ": "...), v...), '\n')
	}
	num := func(b []byte, name string, v uint64) []byte {
		return append(strconv.AppendUint(append(append(b, name...), ": "...), v, 10), '\n')
	}
	b = line(b, "resource", r.Resource)
	b = num(b, "fenceToken", r.FenceToken)
	b = digest(b, "operationRoot", r.OperationRoot)
	b = line(b, "operationId", r.OperationID)
	b = num(b, "segmentSeq", r.SegmentSeq)
	b = digest(b, "payloadDigest", r.PayloadDigest)
	b = digest(b, "grant", r.GrantDigest)
	b = append(b, "acceptedAt: "...)
	b = append(r.AcceptedAt.UTC().AppendFormat(b, grant.TimeLayout), '\n')
	b = line(b, "mode", string(r.Mode))
	return line(b, "outcome", string(r.Outcome))
}

// Digest is sha256 over the domain tag and Encode: the receipt's stable ID.
func (r *Receipt) Digest() grant.Digest {
	var buf [640]byte
	return sha256.Sum256(r.appendEncoding(append(buf[:0], receiptDomain...)))
}

// ID returns Digest in text form.
func (r *Receipt) ID() string { return r.Digest().String() }

// Verdict is the answer to "did this operation happen?" for
// MUTATION_UNKNOWN recovery.
type Verdict string

// Verdicts.
const (
	// VerdictAccepted: at least one receipt exists for the operation ID;
	// reuse it (them).
	VerdictAccepted Verdict = "ACCEPTED"
	// VerdictProvenAbsent: no receipt exists for the operation ID on the
	// resource AND the resource's highestFence is above the fence the
	// operation was attempted under. Receipts are written atomically with
	// every acceptance and never deleted, so the operation did not happen;
	// and the gate rejects every fence below highestFence forever, so it
	// never will under that grant. A new fence may submit a new operation.
	VerdictProvenAbsent Verdict = "PROVEN_ABSENT"
	// VerdictUndetermined: no receipt, but highestFence is not above the
	// operation's fence, so a delayed in-flight copy could still be
	// accepted. Fence the resource (acquire a newer grant and write under
	// it) or reconcile by domain logic, then ask again.
	VerdictUndetermined Verdict = "UNDETERMINED"
)

// Answer is the verdict with its evidence.
type Answer struct {
	Verdict      Verdict
	Receipts     []Receipt // ordered by fence, then segment; non-empty iff ACCEPTED
	HighestFence uint64    // the resource's highestFence at the time of the answer
}

// Judge is the pure verdict over the receipts found for an operation ID
// and the resource's highestFence, for an operation attempted under fence.
func Judge(receipts []Receipt, highestFence, fence uint64) Answer {
	a := Answer{Receipts: receipts, HighestFence: highestFence}
	switch {
	case len(receipts) > 0:
		a.Verdict = VerdictAccepted
	case highestFence > fence:
		a.Verdict = VerdictProvenAbsent
	default:
		a.Verdict = VerdictUndetermined
	}
	return a
}
