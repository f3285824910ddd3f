// Proves the one-walk Decode accepts and refuses exactly what the Decode
// before it did (json.Valid, the walk, then encoding/json's Decoder with
// unknown fields refused), with the same error text and the same value
// written, on any input: differential fuzzing against decodeBefore, that
// function kept here only. Seeds: the refusal table's kinds (repeats,
// letter case, unknown fields, wrong types, trailing data, not an object)
// and input that is not JSON at every place the walk reads.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// decodeBefore is Decode as it was at d03a643.
func decodeBefore(b []byte, v any) error {
	t := structType(reflect.TypeOf(v))
	if !json.Valid(b) {
		return decodeInvalid(b, v, t)
	}
	s := &scanner{b: b}
	s.ws()
	if s.b[s.i] != '{' {
		return errors.New("want a JSON object")
	}
	if t == nil || (t.Kind() != reflect.Struct && t.Kind() != reflect.Map) {
		return fmt.Errorf("strictjson: Decode into %T, want a pointer to a struct or a map", v)
	}
	if e := s.object(t); e != nil {
		return e.err()
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

// fzConflict has two fields of one JSON name, which encoding/json
// ignores (built at run time: go vet refuses the repeated tag in source).
var fzConflict = reflect.StructOf([]reflect.StructField{
	{Name: "A", Type: reflect.TypeOf(""), Tag: `json:"x"`},
	{Name: "B", Type: reflect.TypeOf(""), Tag: `json:"x"`},
	{Name: "C", Type: reflect.TypeOf(0), Tag: `json:"c"`},
})

var decodeSeeds = []string{
	`{"name":"a","one":{"state":"active"},"many":[{"state":"x"},{"state":"y"}],"byKey":{"k":{"state":"z"}},"raw":{"State":1,"State":2},"any":{"a":1,"a":2},"ptr":null,"deep":{"d":[{"state":"w"}]}}`,
	`{"name":"a","name":"b"}`, `{"Name":"a"}`, `{"one":{"state":"active","state":"retired"}}`,
	`{"many":[{"state":"a"},{"state":"a","state":"b"}]}`, `{"byKey":{"k":{"state":"a"},"k":{"state":"b"}}}`,
	`{"deep":{"d":[{"STATE":"a"}]}}`, `{"extra":1}`, `{"name":{"x":1}}`, `{"n\u0061me":"a","name":"b"}`,
	`{ "arr" : [ {"state":"a"} , {"state":"b","x":1} ] }`, `{"nums":[1,2,[3]]}`, `{"name":"a\"b\\","one":{}}`,
	`{"name":1}`, `{"nums":["x"],"name":"a","name":"b"}`, `{"name":"a"} x`, `{"name":"a"}{}`, `{"name":"a"}` + "\n",
	`[1]`, `"a"`, `null`, ``, `   `, `{`, `{"name"`, `{"name":`, `{"name":"a"`, `{"name":"a",}`, `{"a":}`,
	`{"nums":[1,}`, `{"nums":[}`, `{"nums":[1 2]}`, `{"many":[{"state":"a"`, `{"name":"\`, `{"name":"\u00"}`,
	`{"name":tru}`, `{"nums":[01]}`, `{"name":"a" "one":{}}`, `{"name" "a"}`, `{,}`, `{"any":[[[[}`,
	`{"x":"a","c":1}`, `{"c":"s"}`, "{\"name\":\"a\x00\"}", "{\"na\xffme\":1}",
	`{"nums":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`,
	`{"any":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`,
}

// targets are the types each input is decoded into.
func targets() []func() any {
	return []func() any{
		func() any { return new(fzOuter) },
		func() any { return reflect.New(fzConflict).Interface() },
		func() any { return new(map[string]fzInner) },
		func() any { return new(int) },
	}
}

func FuzzDecodeMatchesBefore(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, newV := range targets() {
			before, now := newV(), newV()
			errBefore, errNow := decodeBefore(b, before), Decode(b, now)
			if fmt.Sprint(errBefore) != fmt.Sprint(errNow) {
				t.Fatalf("%q into %T: before %v, now %v", b, before, errBefore, errNow)
			}
			if !reflect.DeepEqual(before, now) {
				t.Fatalf("%q into %T: before wrote %+v, now %+v", b, before, before, now)
			}
		}
	})
}
