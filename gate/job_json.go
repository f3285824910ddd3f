package gate

import (
	"encoding/json"
	"fmt"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/internal/strictjson"
)

// JobJSONBytesMax bounds an encoded job: one canonical grant, its proof
// and a few identifiers, with room for JSON escaping.
const JobJSONBytesMax = 2*GrantBytesMax + 2*ProofBytesMax + 2048

// jobJSON is a job's wire form, for any transport (a River job's
// arguments, a stream message): the grant as its canonical text, digests
// as "sha256:<hex>", counters as JSON numbers.
type jobJSON struct {
	Target          string `json:"target"`
	Resource        string `json:"resource"`
	OperationID     string `json:"operationId"`
	FenceToken      uint64 `json:"fenceToken"`
	SegmentSeq      uint64 `json:"segmentSeq"`
	JobSeq          uint64 `json:"jobSeq"`
	PayloadDigest   string `json:"payloadDigest"`
	UpstreamReceipt string `json:"upstreamReceipt"`
	Grant           string `json:"grant"`
	GrantProof      string `json:"grantProof"`
}

// MarshalJSON encodes the wire form. It does not validate.
func (j Job) MarshalJSON() ([]byte, error) {
	return json.Marshal(jobJSON{
		Target: j.Target, Resource: j.Resource, OperationID: j.OperationID,
		FenceToken: j.FenceToken, SegmentSeq: j.SegmentSeq, JobSeq: j.JobSeq,
		PayloadDigest: j.PayloadDigest.String(), UpstreamReceipt: j.UpstreamReceipt.String(),
		Grant: string(j.Grant), GrantProof: j.GrantProof,
	})
}

// DecodeJob strictly decodes the wire form: one object of at most
// JobJSONBytesMax bytes, no unknown, duplicate or re-cased fields, no
// trailing data, and a valid job (Job.Validate). Errors wrap ErrMalformed.
func DecodeJob(b []byte) (*Job, error) {
	fail := func(format string, args ...any) (*Job, error) {
		return nil, &Rejection{Outcome: Malformed, Reason: "job json: " + fmt.Sprintf(format, args...)}
	}
	if len(b) > JobJSONBytesMax {
		return fail("%d bytes, limit %d", len(b), JobJSONBytesMax)
	}
	var w jobJSON
	if err := strictjson.Decode(b, &w); err != nil {
		return fail("%v", err)
	}
	pd, err := grant.ParseDigest(w.PayloadDigest)
	if err != nil {
		return fail("payloadDigest: %v", err)
	}
	ur, err := grant.ParseDigest(w.UpstreamReceipt)
	if err != nil {
		return fail("upstreamReceipt: %v", err)
	}
	j := &Job{Target: w.Target, Resource: w.Resource, OperationID: w.OperationID, FenceToken: w.FenceToken,
		SegmentSeq: w.SegmentSeq, JobSeq: w.JobSeq, PayloadDigest: pd, UpstreamReceipt: ur,
		Grant: []byte(w.Grant), GrantProof: w.GrantProof}
	if err := j.Validate(); err != nil {
		return nil, err
	}
	return j, nil
}
