// This file proves, by fuzzing, that Authenticate followed by Decide
// accepts no envelope but a genuine one: FuzzEnvelope mutates the fields
// of genuinely signed envelopes (grant and status bytes, proofs, binding
// fields), FuzzAuthenticate the bytes of their JSON wire form. An accept
// whose canonical content (payload digest aside) differs from every
// genuine envelope fails, as does a rejection without its stable code, or
// a cached and an uncached policy answering differently.
// Seed corpus: testdata/fuzz/<Target>/. Run:
// go test ./gate -run '^$' -fuzz '^FuzzEnvelope$' -parallel 2
package gate_test

import (
	"testing"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

// check judges m with both policies: the property must hold for each,
// and the parse cache must not change the answer.
func (fx *envelopeFixture) check(t *testing.T, m *gate.Mutation) {
	t.Helper()
	o, err := fx.judge(fx.pol.Authenticate, m)
	if err != nil {
		t.Fatal(err)
	}
	o2, err := fx.judge(fx.polNoCache.Authenticate, m)
	if err != nil {
		t.Fatal(err)
	}
	if o != o2 {
		t.Fatalf("cached policy answered %s, uncached %s", o, o2)
	}
}

func FuzzEnvelope(f *testing.F) {
	fx := newEnvelopeFixture() // seeds: testdata/fuzz/FuzzEnvelope, from fx.seeds
	f.Fuzz(func(t *testing.T, resource, lease, operationID string, fence, seq uint64,
		grantText []byte, grantProof string, status []byte, statusProof string) {
		m := &gate.Mutation{
			Resource: resource, Lease: lease, OperationID: operationID, FenceToken: fence, SegmentSeq: seq,
			PayloadDigest: gatetest.Payload("p"), Grant: grantText, GrantProof: grantProof,
			Status: status, StatusProof: statusProof,
		}
		fx.check(t, m)
	})
}

// FuzzAuthenticate runs the same property on the JSON wire form, so the
// strict decoder is in the loop: whatever it lets through is judged.
func FuzzAuthenticate(f *testing.F) {
	fx := newEnvelopeFixture() // seeds: testdata/fuzz/FuzzAuthenticate, from fx.seeds
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := gate.DecodeMutation(b)
		if err != nil {
			return // FuzzDecodeMutation checks the decoder's own errors
		}
		fx.check(t, m)
	})
}
