package gate

import (
	"fmt"
	"math"

	"github.com/fencegate/fencegate/grant"
)

// Named limits on the mutation envelope.
const (
	// GrantBytesMax bounds the canonical grant and status texts. A real
	// lockGrant.v1 is under 1 KiB even with every identifier at its limit.
	GrantBytesMax = 4096
	// ProofBytesMax bounds a grant proof's text: a batch proof with a full path
	// (grant.BatchProofBytesMax, 512); a single proof is at most 256
	// (grant.ParseProof). Gates from before batch proofs bound it at 256
	// and refuse a longer one as MALFORMED, which is why the registry
	// signs batches only when told to (docs/operations.md).
	ProofBytesMax = grant.BatchProofBytesMax
	// StatusProofBytesMax bounds a status proof's text: the registry signs
	// every status alone, so 256 (grant.ParseProof's bound), as before
	// batch proofs.
	StatusProofBytesMax = 256
	// CounterMax bounds fenceToken and segmentSeq: both are stored in SQL
	// BIGINT columns, so values above 2^63-1 are rejected as MALFORMED.
	CounterMax = math.MaxInt64
)

// Mutation is the envelope a writer sends to the resource with every
// protected change: which grant it writes under, which segment of which
// operation this is, and a digest of the payload (the payload itself is the
// business function's concern). The gate authenticates it before anything
// touches resource state.
//
// The operation root is grant.OperationRoot(Resource, OperationID) and
// must equal the grant's. Status and StatusProof may both be empty when the
// gate is configured with a StatusQuerier.
type Mutation struct {
	Resource      string       // canonical resource ID, equal to the grant's
	Lease         string       // equal to the grant's lease
	OperationID   string       // the operation this segment belongs to
	FenceToken    uint64       // equal to the grant's fence, 1..CounterMax
	SegmentSeq    uint64       // 1 for the first segment of the operation under this fence
	PayloadDigest grant.Digest // identifies the payload; a replay must repeat it
	Grant         []byte       // canonical lockGrant.v1 bytes
	GrantProof    string       // proof over Grant
	Status        []byte       // canonical grantStatus.v1 bytes, or empty
	StatusProof   string       // proof over Status, or empty
	// GateProofs are the per-gate proofs of Grant and Status the registry
	// sent beside its own (grant.GateProof), passed on untouched. Optional
	// (nil: none); at most grant.GateProofsMax. A gate that checks HMAC
	// under its own key (gate/pggate) picks the pair under a key it has
	// enrolled; this package's Policy ignores them.
	GateProofs []grant.GateProof
}

// Validate checks the envelope's own fields (not the grant). The error
// wraps ErrMalformed as a *Rejection.
func (m *Mutation) Validate() error {
	bad := func(field, format string, args ...any) error {
		return &Rejection{
			Outcome: Malformed, Resource: m.Resource, FenceToken: m.FenceToken, SegmentSeq: m.SegmentSeq,
			Reason: "field " + field + ": " + fmt.Sprintf(format, args...),
		}
	}
	if err := grant.ValidateResource(m.Resource); err != nil {
		return bad("resource", "%v", err)
	}
	if err := grant.ValidateToken(m.Lease); err != nil {
		return bad("lease", "%v", err)
	}
	if err := grant.ValidateOperationID(m.OperationID); err != nil {
		return bad("operationId", "%v", err)
	}
	if m.FenceToken == 0 || m.FenceToken > CounterMax {
		return bad("fenceToken", "%d outside 1..%d", m.FenceToken, uint64(CounterMax))
	}
	if m.SegmentSeq == 0 || m.SegmentSeq > CounterMax {
		return bad("segmentSeq", "%d outside 1..%d", m.SegmentSeq, uint64(CounterMax))
	}
	if m.PayloadDigest.IsZero() {
		return bad("payloadDigest", "zero digest")
	}
	if len(m.Grant) == 0 || len(m.Grant) > GrantBytesMax {
		return bad("grant", "%d bytes, want 1..%d", len(m.Grant), GrantBytesMax)
	}
	if m.GrantProof == "" || len(m.GrantProof) > ProofBytesMax {
		return bad("grantProof", "%d bytes, want 1..%d", len(m.GrantProof), ProofBytesMax)
	}
	if len(m.Status) > GrantBytesMax || len(m.StatusProof) > StatusProofBytesMax {
		return bad("status", "status %d bytes, proof %d bytes, limits %d and %d", len(m.Status), len(m.StatusProof), GrantBytesMax, StatusProofBytesMax)
	}
	if (len(m.Status) == 0) != (m.StatusProof == "") {
		return bad("status", "status and statusProof must both be present or both be empty")
	}
	if err := grant.ValidateGateProofs(m.GateProofs, len(m.Status) > 0); err != nil {
		return bad("gateProofs", "%v", err)
	}
	return nil
}

// OperationRoot returns grant.OperationRoot(m.Resource, m.OperationID).
func (m *Mutation) OperationRoot() grant.Digest {
	return grant.OperationRoot(m.Resource, m.OperationID)
}
