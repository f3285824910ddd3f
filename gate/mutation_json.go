package gate

import (
	"encoding/json"
	"fmt"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/internal/strictjson"
)

// MutationJSONBytesMax bounds an encoded mutation: two canonical messages,
// two proofs and a few identifiers, with room for JSON escaping, and up
// to grant.GateProofsMax per-gate proof pairs with their gate names.
const MutationJSONBytesMax = 4*GrantBytesMax + 4*ProofBytesMax + 2048 + grant.GateProofsMax*gateProofJSONBytesMax

// gateProofJSONBytesMax bounds one encoded grant.GateProof: two proofs, a
// gate name and the member names.
const gateProofJSONBytesMax = 2*ProofBytesMax + grant.KeyIDBytesMax + 64

// mutationJSON is the wire form. Messages travel as their canonical text
// (they are ASCII lines), digests as "sha256:<hex>", counters as JSON
// numbers without fraction or exponent.
type mutationJSON struct {
	Resource      string `json:"resource"`
	Lease         string `json:"lease"`
	OperationID   string `json:"operationId"`
	FenceToken    uint64 `json:"fenceToken"`
	SegmentSeq    uint64 `json:"segmentSeq"`
	PayloadDigest string `json:"payloadDigest"`
	Grant         string `json:"grant"`
	GrantProof    string `json:"grantProof"`
	Status        string `json:"status,omitempty"`
	StatusProof   string `json:"statusProof,omitempty"`
	// GateProofs is omitted when empty, so an envelope without them is
	// byte for byte what it was before the field.
	GateProofs []grant.GateProof `json:"gateProofs,omitempty"`
}

// MarshalJSON encodes the wire form. It does not validate.
func (m Mutation) MarshalJSON() ([]byte, error) {
	return json.Marshal(mutationJSON{
		Resource: m.Resource, Lease: m.Lease, OperationID: m.OperationID,
		FenceToken: m.FenceToken, SegmentSeq: m.SegmentSeq,
		PayloadDigest: m.PayloadDigest.String(),
		Grant:         string(m.Grant), GrantProof: m.GrantProof,
		Status: string(m.Status), StatusProof: m.StatusProof,
		GateProofs: m.GateProofs,
	})
}

// UnmarshalJSON is DecodeMutation into m.
func (m *Mutation) UnmarshalJSON(b []byte) error {
	d, err := DecodeMutation(b)
	if err != nil {
		return err
	}
	*m = *d
	return nil
}

// DecodeMutation strictly decodes the JSON form: exactly one object of at
// most MutationJSONBytesMax bytes, no unknown or duplicate fields, no
// trailing data, and a valid envelope (Mutation.Validate). Errors wrap
// ErrMalformed.
func DecodeMutation(b []byte) (*Mutation, error) {
	fail := func(format string, args ...any) (*Mutation, error) {
		return nil, &Rejection{Outcome: Malformed, Reason: "json: " + fmt.Sprintf(format, args...)}
	}
	if len(b) > MutationJSONBytesMax {
		return fail("%d bytes, limit %d", len(b), MutationJSONBytesMax)
	}
	var w mutationJSON
	if err := strictjson.Decode(b, &w); err != nil {
		return fail("%v", err)
	}
	pd, err := grant.ParseDigest(w.PayloadDigest)
	if err != nil {
		return fail("payloadDigest: %v", err)
	}
	m := &Mutation{
		Resource: w.Resource, Lease: w.Lease, OperationID: w.OperationID,
		FenceToken: w.FenceToken, SegmentSeq: w.SegmentSeq, PayloadDigest: pd,
		Grant: []byte(w.Grant), GrantProof: w.GrantProof, StatusProof: w.StatusProof,
	}
	if len(w.GateProofs) > 0 {
		m.GateProofs = w.GateProofs
	}
	if w.Status != "" {
		m.Status = []byte(w.Status)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}
