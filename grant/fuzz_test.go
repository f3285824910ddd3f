// Fuzz targets for the strict parsers and the verifier: no input panics,
// every rejection carries its stable code (MALFORMED with a *FieldError,
// MALFORMED_PROOF), every accepted message re-encodes to exactly its input
// and validates, and nothing verifies except the messages the test keys
// actually signed.
// Seed corpus: testdata/fuzz/<Target>/. Run: go test ./grant -fuzz FuzzParseGrant
package grant

import (
	"bytes"
	"errors"
	"testing"
)

// checkMalformed fails t unless err is a *FieldError with code MALFORMED.
func checkMalformed(t *testing.T, err error) {
	t.Helper()
	var fe *FieldError
	if !errors.As(err, &fe) || !errors.Is(err, ErrMalformed) || CodeOf(err) != "MALFORMED" {
		t.Fatalf("rejection is not a MALFORMED *FieldError: %v", err)
	}
}

func FuzzParseGrant(f *testing.F) {
	f.Add(testGrant().Encode())
	f.Add(testGrantHeld().Encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := ParseGrant(b)
		if err != nil {
			if g != nil {
				t.Fatal("non-nil grant with error")
			}
			checkMalformed(t, err)
			return
		}
		if !bytes.Equal(g.Encode(), b) {
			t.Fatalf("accepted non-canonical input:\n%q\nre-encodes as\n%q", b, g.Encode())
		}
		if err := g.Validate(); err != nil {
			t.Fatalf("accepted grant fails Validate: %v", err)
		}
	})
}

func FuzzParseStatus(f *testing.F) {
	f.Add(testStatus(testGrant()).Encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseStatus(b)
		if err != nil {
			if s != nil {
				t.Fatal("non-nil status with error")
			}
			checkMalformed(t, err)
			return
		}
		if !bytes.Equal(s.Encode(), b) {
			t.Fatalf("accepted non-canonical input %q", b)
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("accepted status fails Validate: %v", err)
		}
	})
}

func FuzzVerify(f *testing.F) {
	v, ed, mac := testVerifier(f)
	g, gh := testGrant(), testGrantHeld()
	s := testStatus(g)
	signed := map[Digest]bool{g.Digest(): true, gh.Digest(): true, s.Digest(): true}
	f.Add(g.Encode(), mustSign(f, ed, g), false)
	f.Add(gh.Encode(), mustSign(f, ed, gh), false)
	f.Add(gh.Encode(), mustSign(f, mac, gh), false)
	f.Add(g.Encode(), mustSign(f, ed, gh), false) // the held form's proof over the plain form
	f.Add(g.Encode(), mustSign(f, mac, g), false)
	f.Add(s.Encode(), mustSign(f, ed, s), true)
	bps := mustSignBatch(f, ed, []Message{g, gh, s})
	f.Add(gh.Encode(), bps[1], false)
	f.Add(g.Encode(), bps[1], false) // leaf 1's proof for leaf 0
	f.Add(s.Encode(), bps[2], true)
	f.Fuzz(func(t *testing.T, b []byte, proof string, status bool) {
		var m Message
		var err error
		if status {
			m, err = ParseStatus(b)
		} else {
			m, err = ParseGrant(b)
		}
		if err != nil {
			return
		}
		verr := v.Verify(m, proof)
		if verr == nil && !signed[m.Digest()] {
			t.Fatalf("unsigned %s verified with proof %q", m.Schema(), proof)
		}
		if verr != nil && CodeOf(verr) == "" {
			t.Fatalf("refusal without a stable code: %v", verr)
		}
		_, perr := ParseProof(proof)
		if IsBatchProof(proof) {
			_, perr = ParseBatchProof(proof)
		}
		if perr == nil && CodeOf(v.Verify(m, proof)) == "MALFORMED_PROOF" {
			t.Fatal("parsed proof reported malformed")
		}
	})
}

func FuzzParseProof(f *testing.F) {
	f.Add("sig:k1:" + b64.EncodeToString(make([]byte, 64)))
	f.Add("mac:m1:" + b64.EncodeToString(make([]byte, 32)))
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseProof(s)
		if err != nil && CodeOf(err) != "MALFORMED_PROOF" {
			t.Fatalf("rejection without code MALFORMED_PROOF: %v", err)
		}
		if err == nil && p.String() != s {
			t.Fatalf("accepted non-canonical proof %q (canonical %q)", s, p.String())
		}
	})
}
