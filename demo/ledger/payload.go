package ledger

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
)

// Entry is one key and the value a worker writes to it.
type Entry struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// payloadDomain separates ledger payload digests from every other hash.
const payloadDomain = "fencegate-example/ledger/entries/v1\x00"

// PayloadDigest is the digest a worker puts in its envelope for entries
// and the ledger checks before it writes them: sha256 over the domain and
// each key and value, length-prefixed so that no two batches collide.
func PayloadDigest(entries []Entry) grant.Digest {
	h := sha256.New()
	h.Write([]byte(payloadDomain))
	var n [8]byte
	for _, e := range entries {
		for _, s := range []string{e.Key, e.Value} {
			binary.BigEndian.PutUint64(n[:], uint64(len(s)))
			h.Write(n[:])
			h.Write([]byte(s))
		}
	}
	var d grant.Digest
	copy(d[:], h.Sum(nil))
	return d
}

// ReceiptJSON is gate.Receipt on the wire.
type ReceiptJSON struct {
	ID            string `json:"id"`
	Resource      string `json:"resource"`
	FenceToken    uint64 `json:"fenceToken"`
	OperationRoot string `json:"operationRoot"`
	OperationID   string `json:"operationId"`
	SegmentSeq    uint64 `json:"segmentSeq"`
	PayloadDigest string `json:"payloadDigest"`
	GrantDigest   string `json:"grant"`
	AcceptedAt    string `json:"acceptedAt"`
	Mode          string `json:"mode"`
	Outcome       string `json:"outcome"`
}

// AnswerJSON is gate.Answer on the wire.
type AnswerJSON struct {
	Verdict      string        `json:"verdict"`
	HighestFence uint64        `json:"highestFence"`
	Receipts     []ReceiptJSON `json:"receipts"`
}

func receiptToJSON(r gate.Receipt) ReceiptJSON {
	return ReceiptJSON{
		ID: r.ID(), Resource: r.Resource, FenceToken: r.FenceToken, OperationRoot: r.OperationRoot.String(),
		OperationID: r.OperationID, SegmentSeq: r.SegmentSeq, PayloadDigest: r.PayloadDigest.String(),
		GrantDigest: r.GrantDigest.String(), AcceptedAt: r.AcceptedAt.UTC().Format(grant.TimeLayout),
		Mode: string(r.Mode), Outcome: string(r.Outcome),
	}
}

// Receipt parses j back into a gate.Receipt and checks that its ID is the
// digest of its fields.
func (j ReceiptJSON) Receipt() (gate.Receipt, error) {
	r := gate.Receipt{Resource: j.Resource, FenceToken: j.FenceToken, OperationID: j.OperationID,
		SegmentSeq: j.SegmentSeq, Mode: gate.Mode(j.Mode), Outcome: gate.Outcome(j.Outcome)}
	var err error
	for _, f := range []struct {
		dst *grant.Digest
		src string
	}{{&r.OperationRoot, j.OperationRoot}, {&r.PayloadDigest, j.PayloadDigest}, {&r.GrantDigest, j.GrantDigest}} {
		if *f.dst, err = grant.ParseDigest(f.src); err != nil {
			return gate.Receipt{}, fmt.Errorf("ledger: receipt: %w", err)
		}
	}
	if r.AcceptedAt, err = time.Parse(grant.TimeLayout, j.AcceptedAt); err != nil {
		return gate.Receipt{}, fmt.Errorf("ledger: receipt acceptedAt: %w", err)
	}
	if r.ID() != j.ID {
		return gate.Receipt{}, fmt.Errorf("ledger: receipt %s: ID does not match its fields", j.ID)
	}
	return r, nil
}

func answerToJSON(a gate.Answer) AnswerJSON {
	j := AnswerJSON{Verdict: string(a.Verdict), HighestFence: a.HighestFence, Receipts: []ReceiptJSON{}}
	for _, r := range a.Receipts {
		j.Receipts = append(j.Receipts, receiptToJSON(r))
	}
	return j
}

// Answer parses j back into a gate.Answer.
func (j AnswerJSON) Answer() (gate.Answer, error) {
	a := gate.Answer{Verdict: gate.Verdict(j.Verdict), HighestFence: j.HighestFence}
	for _, rj := range j.Receipts {
		r, err := rj.Receipt()
		if err != nil {
			return gate.Answer{}, err
		}
		a.Receipts = append(a.Receipts, r)
	}
	return a, nil
}
