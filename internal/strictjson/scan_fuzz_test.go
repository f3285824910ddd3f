// Proves the fast byte scanner checks exactly what the token walk checks:
// on every valid JSON input, both refuse the same inputs with the same
// message, or both accept (differential fuzzing, seeds from the refusal
// table and the accepted form). The token walk is the reference: it is
// built on encoding/json's own tokenizer.
package strictjson

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

type fzInner struct {
	State string `json:"state"`
}

type fzOuter struct {
	Name  string               `json:"name"`
	One   fzInner              `json:"one"`
	Many  []fzInner            `json:"many"`
	ByKey map[string]fzInner   `json:"byKey"`
	Raw   json.RawMessage      `json:"raw"`
	Any   any                  `json:"any"`
	Ptr   *fzInner             `json:"ptr"`
	Deep  map[string][]fzInner `json:"deep"`
	Arr   [2]fzInner           `json:"arr"`
	Nums  []int                `json:"nums"`
}

func FuzzScanMatchesTokenWalk(f *testing.F) {
	for _, s := range []string{
		`{"name":"a","one":{"state":"active"},"many":[{"state":"x"},{"state":"y"}],"byKey":{"k":{"state":"z"}},"raw":{"State":1,"State":2},"any":{"a":1,"a":2},"ptr":null,"deep":{"d":[{"state":"w"}]}}`,
		`{"name":"a","name":"b"}`, `{"Name":"a"}`, `{"one":{"state":"active","state":"retired"}}`,
		`{"many":[{"state":"a"},{"state":"a","state":"b"}]}`, `{"byKey":{"k":{"state":"a"},"k":{"state":"b"}}}`,
		`{"deep":{"d":[{"STATE":"a"}]}}`, `{"extra":1}`, `{"name":{"x":1}}`, `{"n\u0061me":"a","name":"b"}`,
		`{ "arr" : [ {"state":"a"} , {"state":"b","x":1} ] }`, `{"nums":[1,2,[3]]}`, `{"name":"a\"b\\","one":{}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) || len(bytes.TrimLeft(b, " \t\r\n")) == 0 || bytes.TrimLeft(b, " \t\r\n")[0] != '{' {
			return
		}
		var want string
		d := json.NewDecoder(bytes.NewReader(b))
		d.Token()
		if err := checkObject(d, structType(reflectTypeOfOuter), ""); err != nil {
			want = err.Error()
		}
		s := &scanner{b: b}
		s.ws()
		var got string
		if e := s.object(structType(reflectTypeOfOuter)); e != nil {
			got = e.err().Error()
		}
		if got != want {
			t.Fatalf("%q: scanner %q, token walk %q", b, got, want)
		}
	})
}

var reflectTypeOfOuter = reflect.TypeOf((*fzOuter)(nil))
