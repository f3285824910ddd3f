package objgate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/internal/stored"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/internal/strictjson"
)

// The manifest formats written before format 3, read so that manifests
// already in buckets keep working, and migrated by the next replace,
// which writes format 3. Nothing writes them any more; testdata/legacy
// holds objects the encoders wrote, and the tests read them.
//
// Format 2 is format 3 but for its magic line and its receipts' whole
// form, which left out id, resource and outcome (the manifest's resource
// and ACCEPTED):
//
//	{"fenceToken":F,"operationRoot":"sha256:…","operationId":"…","segmentSeq":S,"payloadDigest":"sha256:…","grant":"sha256:…","acceptedAt":"…","mode":"enforce"}
//
// Format 1 is one JSON object: the version, the state, the last receipt
// in gate's JSON form (the stored form then had the same bytes) and the
// content's data key.

const manifestMagicV2 = "fencegate-manifest 2\n"

// runV2 is what format 2's whole form adds to the short form: the fields
// a run of receipts shares.
type runV2 struct {
	FenceToken    uint64 `json:"fenceToken"`
	OperationRoot string `json:"operationRoot"`
	OperationID   string `json:"operationId"`
	GrantDigest   string `json:"grant"`
	Mode          string `json:"mode"`
}

// parseEntriesV2 turns format 2's entries back into receipts of resource:
// an entry with a fence starts a run, one without continues it.
func parseEntriesV2(resource string, es []json.RawMessage) ([]heldReceipt, error) {
	var rs []heldReceipt
	for i, e := range es {
		r, err := entryV2(resource, rs, e)
		if err != nil { // the store's bytes, not a mutation: no gate outcome (%v)
			return nil, fmt.Errorf("%w: format 2: receipt %d: %v", ErrManifest, i+1, err)
		}
		rs = append(rs, heldReceipt{r: r})
	}
	// Encoded again in format 3's entries, for the migrating replace.
	out := make([]heldReceipt, 0, len(rs))
	for _, hr := range rs {
		out = appendReceipt(out, hr.r)
	}
	return out, nil
}

// entryV2 reads one format 2 entry after the receipts rs.
func entryV2(resource string, rs []heldReceipt, e []byte) (gate.Receipt, error) {
	// The whole form is the short form's fields and runV2's, interleaved:
	// each name exactly once, then each half decoded from the object.
	var members map[string]json.RawMessage
	if err := strictjson.Decode(e, &members); err != nil {
		return gate.Receipt{}, err
	}
	for name := range members {
		if !namesV2[name] {
			return gate.Receipt{}, fmt.Errorf("unknown field %q", name)
		}
	}
	var run runV2
	var seg shortEntry
	if err := errors.Join(json.Unmarshal(e, &run), json.Unmarshal(e, &seg)); err != nil {
		return gate.Receipt{}, err
	}
	if run == (runV2{}) { // the short form
		if len(rs) == 0 {
			return gate.Receipt{}, fmt.Errorf("the first receipt is in the short form")
		}
		return withSegment(rs[len(rs)-1].r, seg)
	}
	if run.FenceToken == 0 || run.FenceToken > gate.CounterMax {
		return gate.Receipt{}, fmt.Errorf("fenceToken %d outside 1..%d", run.FenceToken, uint64(gate.CounterMax))
	}
	if err := grant.ValidateOperationID(run.OperationID); err != nil {
		return gate.Receipt{}, fmt.Errorf("operationId: %w", err)
	}
	r := gate.Receipt{Resource: resource, FenceToken: run.FenceToken, OperationID: run.OperationID, Mode: gate.Mode(run.Mode), Outcome: gate.Accepted}
	var err error
	if r.OperationRoot, err = grant.ParseDigest(run.OperationRoot); err != nil {
		return r, fmt.Errorf("operationRoot: %w", err)
	}
	if r.GrantDigest, err = grant.ParseDigest(run.GrantDigest); err != nil {
		return r, fmt.Errorf("grant: %w", err)
	}
	if _, err := gate.ParseMode(run.Mode); err != nil {
		return r, err
	}
	return withSegment(r, seg)
}

// namesV2 are the field names of format 2's entries.
var namesV2 = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range append(strictjson.Names(runV2{}), strictjson.Names(shortEntry{})...) {
		m[n] = true
	}
	return m
}()

// parseV2 reads what follows format 2's magic line. Format 2 has no
// encoder left to compare with, so its header is first walked strictly.
func (g *Gate) parseV2(resource string, rest []byte) (held, error) {
	line, _, _ := bytes.Cut(rest, []byte{'\n'})
	var mh manifestHeader
	if err := strictjson.Decode(line, &mh); err != nil {
		return held{}, fmt.Errorf("%w: format 2: %v", ErrManifest, err)
	}
	return g.parseBody(resource, rest, parseEntriesV2)
}

// manifestV1 is format 1.
type manifestV1 struct {
	Version uint64        `json:"version"`
	State   stored.State  `json:"state"`
	Last    *gate.Receipt `json:"lastReceipt,omitempty"`
	Data    string        `json:"data,omitempty"`
}

// parseV1 reads a format 1 manifest: its last receipt becomes the one
// receipt held (every earlier one was written to an object of its own,
// which the receipt lookups read as they read a batch).
func (g *Gate) parseV1(resource string, b []byte) (held, error) {
	var m manifestV1
	if err := stored.Decode(b, &m); err != nil { // the store's bytes, not a mutation: no gate outcome (%v)
		return held{}, fmt.Errorf("%w: format 1: %v", ErrManifest, err)
	}
	if !bytes.Equal(stored.Encode(m), b) { // as format 1 wrote it: no re-cased, repeated or spaced field
		return held{}, fmt.Errorf("%w: format 1: not in canonical form", ErrManifest)
	}
	h := held{version: m.Version, data: m.Data}
	var err error
	if h.st, err = g.manifestState(resource, m.State); err != nil {
		return held{}, err
	}
	if m.Last != nil {
		h.receipts = appendReceipt(nil, *m.Last)
	}
	return h, g.checkHeld(resource, h)
}
