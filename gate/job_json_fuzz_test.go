// This file proves, by fuzzing, that the job decoder is strict and the job
// authentication sound: DecodeJob never panics, rejects only with
// MALFORMED, accepts no field given twice or in another letter case, and
// what it accepts re-encodes to an equal job; AuthenticateJob lets
// through no grant but the genuine one the seeds carry.
// Seed corpus: testdata/fuzz/FuzzDecodeJob/. Run:
// go test ./gate -run '^$' -fuzz '^FuzzDecodeJob$' -parallel 2
package gate_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"testing"

	"github.com/fencegate/fencegate/gate"
)

// jobJSONNames are the job wire form's field names, exactly.
var jobJSONNames = map[string]bool{
	"target": true, "resource": true, "operationId": true, "fenceToken": true, "segmentSeq": true,
	"jobSeq": true, "payloadDigest": true, "upstreamReceipt": true, "grant": true, "grantProof": true,
}

// flatKeyProblem names the first top-level key of the JSON object b that
// repeats or is not exactly one of names, or data after the object,
// independently of the decoder under test; "" when there is none or b is
// no JSON object.
func flatKeyProblem(b []byte, names map[string]bool) string {
	d := json.NewDecoder(bytes.NewReader(b))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return ""
	}
	seen := map[string]bool{}
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return ""
		}
		k, _ := tok.(string)
		switch {
		case seen[k]:
			return "duplicate key " + k
		case !names[k]:
			return "unknown key " + k
		}
		seen[k] = true
		var skip json.RawMessage
		if d.Decode(&skip) != nil {
			return ""
		}
	}
	if _, err := d.Token(); err != nil { // the '}'
		return ""
	}
	if _, err := d.Token(); err != io.EOF {
		return "trailing data"
	}
	return ""
}

func FuzzDecodeJob(f *testing.F) {
	fx := newFixture(f)
	j, _ := jobOf(f, fx, 5, 1, 1, "op-a", "p")
	// seeds: testdata/fuzz/FuzzDecodeJob, from jobSeeds
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := gate.DecodeJob(b)
		if err != nil {
			if !errors.Is(err, gate.ErrMalformed) {
				t.Fatalf("error not MALFORMED: %v", err)
			}
			return
		}
		if p := flatKeyProblem(b, jobJSONNames); p != "" {
			t.Fatalf("accepted a job with a %s:\n%s", p, b)
		}
		again, err := json.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		back, err := gate.DecodeJob(again)
		if err != nil || !reflect.DeepEqual(got, back) {
			t.Fatalf("re-encode: %v\n%+v\n%+v", err, got, back)
		}
		if err := jobAuthProblem(fx.pol, got, j); err != nil {
			t.Fatal(err)
		}
	})
}

// jobAuthProblem reports an AuthenticateJob answer that breaks the
// property: a rejection without its code, or an accept of a grant other
// than genuine's.
func jobAuthProblem(pol *gate.Policy, j, genuine *gate.Job) error {
	v, err := pol.AuthenticateJob(j, hop)
	if err != nil {
		if o := gate.OutcomeOf(err); !authOutcomes[o] {
			return fmt.Errorf("job rejected without a stable code (%q): %v", o, err)
		}
		return nil
	}
	if !bytes.Equal(j.Grant, genuine.Grant) || j.GrantProof != genuine.GrantProof || v.Grant.FenceToken != genuine.FenceToken {
		return fmt.Errorf("a grant other than the genuine one authenticated a job:\n%s", j.Grant)
	}
	return nil
}

// TestFlatKeyWalkerCanFail shows flatKeyProblem flags what the decoders
// must refuse, so the fuzz targets' strictness checks can fail.
func TestFlatKeyWalkerCanFail(t *testing.T) {
	names := map[string]bool{"a": true, "b": true}
	for in, bad := range map[string]bool{
		`{"a":1,"b":{"a":1,"a":2}}`: false, // nested values are the decoder's concern
		`{"a":1,"a":2}`:             true,
		`{"A":1}`:                   true,
		`{"a":1} 7`:                 true,
		`{"a":1}` + " \n":           false,
	} {
		if got := flatKeyProblem([]byte(in), names) != ""; got != bad {
			t.Errorf("%s: flagged %v, want %v", in, got, bad)
		}
	}
}
