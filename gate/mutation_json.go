package gate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/fencegate/fencegate/grant"
)

// MutationJSONBytesMax bounds an encoded mutation: two canonical messages,
// two proofs and a few identifiers, with room for JSON escaping.
const MutationJSONBytesMax = 4*GrantBytesMax + 4*ProofBytesMax + 2048

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
}

// MarshalJSON encodes the wire form. It does not validate.
func (m Mutation) MarshalJSON() ([]byte, error) {
	return json.Marshal(mutationJSON{
		Resource: m.Resource, Lease: m.Lease, OperationID: m.OperationID,
		FenceToken: m.FenceToken, SegmentSeq: m.SegmentSeq,
		PayloadDigest: m.PayloadDigest.String(),
		Grant:         string(m.Grant), GrantProof: m.GrantProof,
		Status: string(m.Status), StatusProof: m.StatusProof,
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
	if err := checkObjectKeys(b, mutationJSONFields); err != nil {
		return fail("%v", err)
	}
	var w mutationJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return fail("%v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fail("trailing data after the object")
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
	if w.Status != "" {
		m.Status = []byte(w.Status)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}

// mutationJSONFields are the exact field names; encoding/json alone would
// also accept them in any letter case.
var mutationJSONFields = map[string]bool{
	"resource": true, "lease": true, "operationId": true, "fenceToken": true,
	"segmentSeq": true, "payloadDigest": true, "grant": true, "grantProof": true,
	"status": true, "statusProof": true,
}

// checkObjectKeys rejects anything but a JSON object, a repeated key
// (encoding/json would silently keep the last) and a key that is not
// exactly one of names (encoding/json would match it ignoring case). The
// wire forms are flat: values are skipped whole.
func checkObjectKeys(b []byte, names map[string]bool) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok != json.Delim('{') {
		return errors.New("want a JSON object")
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		if !names[key] {
			return fmt.Errorf("unknown field %q (names are case-sensitive)", key)
		}
		if seen[key] {
			return fmt.Errorf("duplicate field %q", key)
		}
		seen[key] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return err
		}
	}
	return nil
}
