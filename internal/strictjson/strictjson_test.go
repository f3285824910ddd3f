// Proves Decode refuses what encoding/json alone accepts — a field given
// twice or in another letter case, at the top level, in a nested object,
// in an array's objects and as a map key; an unknown field; trailing data;
// anything but an object — and accepts what the struct spells, leaving a
// RawMessage's and an interface's contents alone. Each refused input is
// first shown to decode with encoding/json, so the test cannot pass for
// want of a difference.
package strictjson_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/internal/strictjson"
)

type inner struct {
	State string `json:"state"`
}

type outer struct {
	Name  string             `json:"name"`
	One   inner              `json:"one"`
	Many  []inner            `json:"many,omitempty"`
	ByKey map[string]inner   `json:"byKey,omitempty"`
	Raw   json.RawMessage    `json:"raw,omitempty"`
	Any   any                `json:"any,omitempty"`
	Ptr   *inner             `json:"ptr,omitempty"`
	Skip  string             `json:"-"`
	Tags  map[string]string  `json:"tags,omitempty"`
	Deep  map[string][]inner `json:"deep,omitempty"`
}

func TestDecodeAcceptsWhatTheStructSpells(t *testing.T) {
	in := `{"name":"a","one":{"state":"active"},"many":[{"state":"x"},{"state":"y"}],"byKey":{"k":{"state":"z"}},
		"raw":{"State":1,"State":2},"any":{"a":1,"a":2},"ptr":null,"tags":{"a":"1"},"deep":{"d":[{"state":"w"}]}}` + "\n"
	var v outer
	if err := strictjson.Decode([]byte(in), &v); err != nil {
		t.Fatal(err)
	}
	if v.One.State != "active" || len(v.Many) != 2 || v.ByKey["k"].State != "z" || v.Deep["d"][0].State != "w" {
		t.Fatalf("decoded %+v", v)
	}
}

func TestDecodeRefuses(t *testing.T) {
	for name, c := range map[string]struct{ in, want string }{
		"field twice":         {`{"name":"a","name":"b"}`, `field "name" given twice`},
		"re-cased field":      {`{"Name":"a"}`, `unknown field "Name"`},
		"nested field twice":  {`{"one":{"state":"active","state":"retired"}}`, `one: field "state" given twice`},
		"nested re-cased":     {`{"one":{"State":"retired"}}`, `one: unknown field "State"`},
		"in an array":         {`{"many":[{"state":"a"},{"state":"a","state":"b"}]}`, `many[1]: field "state" given twice`},
		"map key twice":       {`{"byKey":{"k":{"state":"a"},"k":{"state":"b"}}}`, `byKey: field "k" given twice`},
		"in a map's value":    {`{"deep":{"d":[{"STATE":"a"}]}}`, `deep.d[0]: unknown field "STATE"`},
		"unknown field":       {`{"extra":1}`, `unknown field "extra"`},
		"a field tagged -":    {`{"Skip":"x"}`, `unknown field "Skip"`},
		"trailing data":       {`{"name":"a"} {"name":"b"}`, `trailing data`},
		"an array":            {`[{"name":"a"}]`, `want a JSON object`},
		"null":                {`null`, `want a JSON object`},
		"object for a string": {`{"name":{"x":1}}`, `name: unexpected {`},
		"wrong type, for Go":  {`{"name":1}`, `cannot unmarshal number`},
	} {
		var v outer
		err := strictjson.Decode([]byte(c.in), &v)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", name, err, c.want)
		}
	}
}

// The control: encoding/json alone takes the inputs that only strictness
// refuses.
func TestEncodingJSONAloneAcceptsThem(t *testing.T) {
	for _, in := range []string{`{"name":"a","name":"b"}`, `{"Name":"a"}`, `{"one":{"state":"active","state":"retired"}}`,
		`{"many":[{"state":"a"},{"state":"a","state":"b"}]}`, `{"byKey":{"k":{"state":"a"},"k":{"state":"b"}}}`} {
		var v outer
		if err := json.Unmarshal([]byte(in), &v); err != nil {
			t.Errorf("%s: encoding/json refused it too (%v): the case shows nothing", in, err)
		}
	}
}

func TestDecodeNeedsAStructOrMap(t *testing.T) {
	var s string
	if err := strictjson.Decode([]byte(`{}`), &s); err == nil {
		t.Fatal("decoded an object into a string")
	}
}
