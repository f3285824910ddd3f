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
	"reflect"
	"testing"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/testkit/jsonkeys"
)

// jobJSONNames are the job wire form's field names, exactly.
var jobJSONNames = map[string]bool{
	"target": true, "resource": true, "operationId": true, "fenceToken": true, "segmentSeq": true,
	"jobSeq": true, "payloadDigest": true, "upstreamReceipt": true, "grant": true, "grantProof": true,
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
		if p := jsonkeys.Problem(b, jobJSONNames); p != "" {
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
