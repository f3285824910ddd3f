// Proves the oracle flags what a strict decoder must refuse — a key twice,
// a re-cased or unknown key, at the top level or nested in objects and
// arrays, and trailing data — and nothing else, so the fuzz targets that
// use it can fail; and that FieldsDiffer tells two wire forms apart by
// their JSON tags alone.
package jsonkeys_test

import (
	"reflect"
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

func TestFieldsDiffer(t *testing.T) {
	type wireForm struct {
		A int    `json:"a"`
		B string `json:"b,omitempty"`
	}
	type same struct {
		A any    `json:"a"`
		B []byte `json:"b,omitempty"`
	}
	type renamed struct {
		A int    `json:"a"`
		B string `json:"bee,omitempty"`
	}
	type shorter struct {
		A int `json:"a"`
	}
	if d := jsonkeys.FieldsDiffer(reflect.TypeFor[same](), reflect.TypeFor[wireForm]()); d != "" {
		t.Fatalf("same tags, other Go types: %s", d)
	}
	for _, ty := range []reflect.Type{reflect.TypeFor[renamed](), reflect.TypeFor[shorter]()} {
		if jsonkeys.FieldsDiffer(ty, reflect.TypeFor[wireForm]()) == "" {
			t.Fatalf("%v passes for the wire form", ty)
		}
	}
}
