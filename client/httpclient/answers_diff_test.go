// Proves answersInto, the one-pass decode of a batch's answers, gives
// every call what the two-step decode gives (wire.BatchResponse, then
// answerOf per answer) or declines and touches nothing: differential
// fuzzing over batch bodies of two calls, well formed and not (answers
// absent, null, of the wrong shape, too few or too many, error answers).
package httpclient

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/fencegate/fencegate/wire"
)

// twoStep is send's decode of a 200 body before answersInto: each call's
// error, and its out.
func twoStep(body []byte, group []*batchCall) {
	var resp wire.BatchResponse
	var err error
	if e := json.Unmarshal(body, &resp); e != nil {
		err = fmt.Errorf("%w: POST /v1/batch: %v", ErrBadResponse, e)
	}
	if err == nil && len(resp.Answers) != len(group) {
		err = fmt.Errorf("%w: POST /v1/batch: %d answers to %d operations", ErrBadResponse, len(resp.Answers), len(group))
	}
	for i, c := range group {
		if err != nil {
			c.finish(err)
			continue
		}
		c.finish(answerOf(resp.Answers[i], c.out))
	}
}

func answerGroup() []*batchCall {
	return []*batchCall{
		{out: new(wire.IssuedResponse), done: make(chan struct{})},
		{out: new(wire.ReleaseResponse), done: make(chan struct{})},
	}
}

func FuzzAnswersIntoMatchesTwoStep(f *testing.F) {
	for _, s := range []string{
		`{"answers":[{"status":200,"answer":{"grant":"g","grantProof":"p","status":"s","expiresAfterMs":5}},{"status":200,"answer":{"resource":"r","lease":"l","state":"RELEASED"}}]}`,
		`{"answers":[{"status":409,"error":{"code":"HELD","message":"held"}},{"status":200,"answer":{}}]}`,
		`{"answers":[{"status":200},{"status":200,"answer":{}}]}`,
		`{"answers":[{"status":200,"answer":null},{"status":200,"answer":{}}]}`,
		`{"answers":[{"status":200,"answer":{"expiresAfterMs":"x"}},{"status":200,"answer":{}}]}`,
		`{"answers":[{"status":200,"answer":[]},{"status":200,"answer":{}}]}`,
		`{"answers":[{"status":500},{"status":404,"answer":{"x":1}}]}`,
		`{"answers":[{"status":200,"answer":{}}]}`,
		`{"answers":[{"status":200,"answer":{}},{"status":200,"answer":{}},{"status":200,"answer":{}}]}`,
		`{"answers":null}`, `{}`, `[]`, `{"answers":[{"status":200,"answer":{}},{"status":200,"answer":{}}]} x`,
		`{"answers":[{"status":"200","answer":{}},{"status":200,"answer":{}}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		want, got := answerGroup(), answerGroup()
		twoStep(body, want)
		before := answerGroup()
		if !answersInto(body, got) {
			for i, c := range got {
				if !reflect.DeepEqual(c.out, before[i].out) {
					t.Fatalf("%q: declined but wrote call %d's out: %+v", body, i, c.out)
				}
				select {
				case <-c.done:
					t.Fatalf("%q: declined but finished call %d", body, i)
				default:
				}
			}
			twoStep(body, got) // what send does then
		}
		for i := range want {
			if fmt.Sprint(want[i].err) != fmt.Sprint(got[i].err) || !reflect.DeepEqual(want[i].out, got[i].out) {
				t.Fatalf("%q call %d: two-step %v %+v, one pass %v %+v", body, i, want[i].err, want[i].out, got[i].err, got[i].out)
			}
		}
	})
}
