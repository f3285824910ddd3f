// Proves the oracle flags what a strict decoder must refuse — a key twice,
// a re-cased or unknown key, at the top level or nested in objects and
// arrays, and trailing data — and nothing else, so the fuzz targets that
// use it can fail.
package jsonkeys_test

import (
	"testing"

	"github.com/fencegate/fencegate/testkit/jsonkeys"
)

func TestProblem(t *testing.T) {
	names := map[string]bool{"a": true, "b": true}
	for in, want := range map[string]string{
		`{"a":1,"b":2}`:                       "",
		`{"a":1,"b":{"a":[{"b":1}]}}` + " \n": "",
		`[{"a":1},{"b":2}]`:                   "",
		`not json`:                            "",
		`{"a":1,"a":2}`:                       "duplicate key a",
		`{"A":1}`:                             "unknown key A",
		`{"a":1,"extra":true}`:                "unknown key extra",
		`{"a":1,"b":{"a":1,"a":2}}`:           "duplicate key a",
		`{"a":[{"b":1},{"B":1}]}`:             "unknown key B",
		`{"a":1} 7`:                           "trailing data",
		`{"a":1} {}`:                          "trailing data",
	} {
		if got := jsonkeys.Problem([]byte(in), names); got != want {
			t.Errorf("%s: %q, want %q", in, got, want)
		}
	}
}
