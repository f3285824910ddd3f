package gate

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/fencegate/fencegate/gate/internal/jsonappend"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/internal/strictjson"
)

// The one JSON form of a receipt and of an answer, for every place one
// leaves the process: a service's answer to a write or a receipt query
// (demo/ledger, the chaos suite's service), and the receipts the
// key-value adapters store (redisgate's receipts hash, objgate's
// manifests and receipt batches).

// ReceiptJSONBytesMax bounds an encoded receipt: four digests, an
// instant, a mode, an outcome, the resource and the operation ID at
// their limits, with room for JSON escaping.
const ReceiptJSONBytesMax = 6*(grant.ResourceBytesMax+grant.TokenBytesMax) + 1024

// receiptJSON is a receipt's wire form: digests as "sha256:<hex>", the
// instant in grant.TimeLayout, counters as JSON numbers. id is the
// receipt's Digest, so a receipt altered anywhere on its way no longer
// decodes. AppendJSON writes these members in this order.
type receiptJSON struct {
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

// MarshalJSON encodes the wire form, with the receipt's ID. It does not
// validate.
func (r Receipt) MarshalJSON() ([]byte, error) {
	return r.AppendJSON(make([]byte, 0, 512)), nil
}

// AppendJSON appends MarshalJSON's bytes to dst: for the adapters, which
// write receipts on every accept, without encoding/json's reflection.
func (r *Receipt) AppendJSON(dst []byte) []byte {
	digest := func(dst []byte, sep byte, name string, d grant.Digest) []byte {
		dst = append(jsonappend.Name(dst, sep, name), `"sha256:`...)
		return append(hex.AppendEncode(dst, d[:]), '"')
	}
	dst = digest(dst, '{', "id", r.Digest())
	dst = jsonappend.Str(dst, ',', "resource", r.Resource)
	dst = jsonappend.Uint(dst, ',', "fenceToken", r.FenceToken)
	dst = digest(dst, ',', "operationRoot", r.OperationRoot)
	dst = jsonappend.Str(dst, ',', "operationId", r.OperationID)
	dst = jsonappend.Uint(dst, ',', "segmentSeq", r.SegmentSeq)
	dst = digest(dst, ',', "payloadDigest", r.PayloadDigest)
	dst = digest(dst, ',', "grant", r.GrantDigest)
	dst = append(r.AcceptedAt.UTC().AppendFormat(append(jsonappend.Name(dst, ',', "acceptedAt"), '"'), grant.TimeLayout), '"')
	dst = jsonappend.Str(dst, ',', "mode", string(r.Mode))
	dst = jsonappend.Str(dst, ',', "outcome", string(r.Outcome))
	return append(dst, '}')
}

// UnmarshalJSON is DecodeReceipt into r.
func (r *Receipt) UnmarshalJSON(b []byte) error {
	d, err := DecodeReceipt(b)
	if err != nil {
		return err
	}
	*r = d
	return nil
}

// DecodeReceipt strictly decodes the wire form: exactly one object of at
// most ReceiptJSONBytesMax bytes, no unknown, duplicate or re-cased
// fields, no trailing data; a valid resource and operation ID, fence and
// segment in 1..CounterMax, digests as "sha256:" and 64 lowercase hex
// digits, acceptedAt exactly in grant.TimeLayout, a known mode and
// outcome (ACCEPTED for a stored receipt; a shadow-mode answer carries
// the would-be rejection), and an id that is the digest of the rest.
// Errors wrap ErrMalformed.
func DecodeReceipt(b []byte) (Receipt, error) {
	fail := func(format string, args ...any) (Receipt, error) {
		return Receipt{}, &Rejection{Outcome: Malformed, Reason: "receipt json: " + fmt.Sprintf(format, args...)}
	}
	if len(b) > ReceiptJSONBytesMax {
		return fail("%d bytes, limit %d", len(b), ReceiptJSONBytesMax)
	}
	if r, ok := decodeCanonicalReceipt(b); ok {
		return r, nil
	}
	var w receiptJSON
	if err := strictjson.Decode(b, &w); err != nil {
		return fail("%v", err)
	}
	r, why := w.receipt()
	if why != "" {
		return fail("%s", why)
	}
	if id := r.ID(); id != w.ID {
		return fail("id %s is not the digest of the fields (%s)", w.ID, id)
	}
	return r, nil
}

// decodeCanonicalReceipt decodes b in one pass when it is exactly what
// AppendJSON writes: the key-value adapters read back receipts they
// wrote on every cold read, and strictjson's walk costs several times a
// plain decode. Bytes equal to the re-encoding hold each field once,
// spelled exactly, with nothing after, and an id that is the digest of
// the fields (AppendJSON writes the digest), so they need no walk; any
// other input takes DecodeReceipt's strict path, which decides.
func decodeCanonicalReceipt(b []byte) (Receipt, bool) {
	var w receiptJSON
	if json.Unmarshal(b, &w) != nil {
		return Receipt{}, false
	}
	r, why := w.receipt()
	if why != "" || !bytes.Equal(r.AppendJSON(make([]byte, 0, len(b))), b) {
		return Receipt{}, false
	}
	return r, true
}

// receipt converts w, checking every field but the id; the string says
// what is wrong, or is "".
func (w receiptJSON) receipt() (Receipt, string) {
	r := Receipt{Resource: w.Resource, FenceToken: w.FenceToken, OperationID: w.OperationID, SegmentSeq: w.SegmentSeq,
		Mode: Mode(w.Mode), Outcome: Outcome(w.Outcome)}
	why := r.parseJSON(w)
	return r, why
}

// parseJSON fills r's digests and instant from w and checks every field,
// returning what is wrong or "".
func (r *Receipt) parseJSON(w receiptJSON) string {
	if err := grant.ValidateResource(w.Resource); err != nil {
		return "resource: " + err.Error()
	}
	if err := grant.ValidateOperationID(w.OperationID); err != nil {
		return "operationId: " + err.Error()
	}
	if w.FenceToken == 0 || w.FenceToken > CounterMax || w.SegmentSeq == 0 || w.SegmentSeq > CounterMax {
		return fmt.Sprintf("fenceToken %d, segmentSeq %d: each must be in 1..%d", w.FenceToken, w.SegmentSeq, uint64(CounterMax))
	}
	for _, f := range []struct {
		name string
		dst  *grant.Digest
		src  string
	}{{"operationRoot", &r.OperationRoot, w.OperationRoot}, {"payloadDigest", &r.PayloadDigest, w.PayloadDigest},
		{"grant", &r.GrantDigest, w.GrantDigest}} {
		var err error
		if *f.dst, err = grant.ParseDigest(f.src); err != nil {
			return f.name + ": " + err.Error()
		}
	}
	t, err := time.Parse(grant.TimeLayout, w.AcceptedAt)
	if err != nil || t.Format(grant.TimeLayout) != w.AcceptedAt {
		return fmt.Sprintf("acceptedAt %q: want an instant like %s", w.AcceptedAt, grant.TimeLayout)
	}
	r.AcceptedAt = t.UTC()
	if _, err := ParseMode(w.Mode); err != nil {
		return err.Error()
	}
	if r.Outcome.Err() == nil {
		return fmt.Sprintf("outcome %q is not a gate outcome", w.Outcome)
	}
	return ""
}

// answerJSON is an answer's wire form: the receipts each in the
// receipt's form, [] for none.
type answerJSON struct {
	Verdict      string            `json:"verdict"`
	HighestFence uint64            `json:"highestFence"`
	Receipts     []json.RawMessage `json:"receipts"`
}

// MarshalJSON encodes the wire form. It does not validate.
func (a Answer) MarshalJSON() ([]byte, error) {
	b := jsonappend.Str(make([]byte, 0, 64+512*len(a.Receipts)), '{', "verdict", string(a.Verdict))
	b = jsonappend.Uint(b, ',', "highestFence", a.HighestFence)
	b = append(jsonappend.Name(b, ',', "receipts"), '[')
	for i := range a.Receipts {
		if i > 0 {
			b = append(b, ',')
		}
		b = a.Receipts[i].AppendJSON(b)
	}
	return append(b, ']', '}'), nil
}

// UnmarshalJSON is DecodeAnswer into a.
func (a *Answer) UnmarshalJSON(b []byte) error {
	d, err := DecodeAnswer(b)
	if err != nil {
		return err
	}
	*a = d
	return nil
}

// DecodeAnswer strictly decodes the wire form: one object, no unknown,
// duplicate or re-cased fields, no trailing data; a known verdict;
// receipts, each as DecodeReceipt accepts it and an accept, of one
// resource and one operation, in rising (fence, segment) order, and
// present iff the verdict is ACCEPTED. It has no size limit of its own
// (an operation has as many receipts as segments): the caller bounds
// what it reads. Errors wrap ErrMalformed.
func DecodeAnswer(b []byte) (Answer, error) {
	fail := func(format string, args ...any) (Answer, error) {
		return Answer{}, &Rejection{Outcome: Malformed, Reason: "answer json: " + fmt.Sprintf(format, args...)}
	}
	var w answerJSON
	if err := strictjson.Decode(b, &w); err != nil {
		return fail("%v", err)
	}
	a := Answer{Verdict: Verdict(w.Verdict), HighestFence: w.HighestFence}
	switch a.Verdict {
	case VerdictAccepted, VerdictProvenAbsent, VerdictUndetermined:
	default:
		return fail("verdict %q", w.Verdict)
	}
	if (a.Verdict == VerdictAccepted) != (len(w.Receipts) > 0) {
		return fail("verdict %s with %d receipts", a.Verdict, len(w.Receipts))
	}
	for i, rb := range w.Receipts {
		r, err := DecodeReceipt(rb)
		if err != nil {
			return Answer{}, err
		}
		if why := followsIn(a.Receipts, r); why != "" {
			return fail("receipt %d: %s", i+1, why)
		}
		a.Receipts = append(a.Receipts, r)
	}
	return a, nil
}

// followsIn says why r cannot come after rs in an answer, or "".
func followsIn(rs []Receipt, r Receipt) string {
	if r.Outcome != Accepted {
		return fmt.Sprintf("outcome %s, not an accept", r.Outcome)
	}
	if len(rs) == 0 {
		return ""
	}
	p := rs[len(rs)-1]
	switch {
	case r.Resource != p.Resource || r.OperationID != p.OperationID:
		return fmt.Sprintf("of %s/%s after one of %s/%s", r.Resource, r.OperationID, p.Resource, p.OperationID)
	case r.FenceToken < p.FenceToken || r.FenceToken == p.FenceToken && r.SegmentSeq <= p.SegmentSeq:
		return fmt.Sprintf("(fence %d, segment %d) after (%d, %d)", r.FenceToken, r.SegmentSeq, p.FenceToken, p.SegmentSeq)
	}
	return ""
}
