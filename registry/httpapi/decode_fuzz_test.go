// Tests that the strict request decoder never panics, rejects only with
// BAD_REQUEST or TOO_LARGE, accepts no field given twice or in another
// letter case (checked by a key walker independent of the decoder), and
// that whatever it accepts survives a round trip unchanged (so nothing it
// accepts is silently dropped or merged); and that bearer authentication
// answers only the exact token of a table entry with its identity.
package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// topLevelKeyProblem names the first top-level key of the JSON object b
// that repeats or is not exactly one of names, or data after the object,
// without the decoder's code; "" when there is none or b is no JSON object.
func topLevelKeyProblem(b []byte, names map[string]bool) string {
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
		if seen[k] || !names[k] {
			return "key " + k
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

// jsonNames returns the exact JSON names of the struct v points to.
func jsonNames(v any) map[string]bool {
	t := reflect.TypeOf(v).Elem()
	names := map[string]bool{}
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		names[name] = true
	}
	return names
}

// fuzzTargets are fresh values of every request type the API decodes.
func fuzzTargets() []any {
	return []any{
		&AcquireRequest{}, &LeaseRequest{}, &StatusRequest{}, &RevokeEpochsRequest{},
		&PolicyRequest{}, &FloorRequest{}, &ResourceRequest{},
	}
}

func FuzzDecodeRequest(f *testing.F) {
	f.Add([]byte(`{"resource":"inv/1","operationId":"op-1","operationClass":"settle","requestId":"r-1","ttlMs":5000,"waitMs":100}`))
	f.Add([]byte(`{"resource":"inv/1","lease":"lease-1"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, v := range fuzzTargets() {
			err := DecodeRequest(b, v)
			if err != nil {
				if !errors.Is(err, ErrBadRequest) && !errors.Is(err, ErrTooLarge) {
					t.Fatalf("%T: error %v wraps neither ErrBadRequest nor ErrTooLarge", v, err)
				}
				continue
			}
			if p := topLevelKeyProblem(b, jsonNames(v)); p != "" {
				t.Fatalf("%T: accepted a repeated or inexact %s:\n%s", v, p, b)
			}
			again, err := json.Marshal(v)
			if err != nil {
				t.Fatalf("%T: accepted value does not marshal: %v", v, err)
			}
			w := reflect.New(reflect.TypeOf(v).Elem()).Interface()
			if err := DecodeRequest(again, w); err != nil {
				t.Fatalf("%T: re-encoding %s of accepted input is rejected: %v", v, again, err)
			}
			if !reflect.DeepEqual(v, w) {
				t.Fatalf("%T: round trip changed %+v into %+v", v, v, w)
			}
		}
	})
}

// TestKeyWalkerCanFail shows topLevelKeyProblem flags what the decoder
// must refuse, so FuzzDecodeRequest's strictness check can fail.
func TestKeyWalkerCanFail(t *testing.T) {
	names := jsonNames(&LeaseRequest{})
	for in, bad := range map[string]bool{
		`{"resource":"a","lease":"b"}`:              false,
		`{"resource":"a","lease":"b","lease":"c"}`:  true,
		`{"resource":"a","Lease":"b"}`:              true,
		`{"resource":"a","lease":"b","extra":true}`: true,
		`{"resource":"a","lease":"b"} {}`:           true,
	} {
		if got := topLevelKeyProblem([]byte(in), names) != ""; got != bad {
			t.Errorf("%s: flagged %v, want %v", in, got, bad)
		}
	}
}

func FuzzBearerAuth(f *testing.F) {
	auth, err := ParseTokenFile([]byte(tokenTable))
	if err != nil {
		f.Fatal(err)
	}
	ids := map[string]string{tokAlice: "alice", tokBob: "bob", tokAdmin: adminID}
	for tok := range ids {
		f.Add("Bearer " + tok)
		f.Add("bearer " + tok + " ")
	}
	f.Add("Basic " + tokBob)
	f.Fuzz(func(t *testing.T, header string) {
		r, _ := http.NewRequest(http.MethodPost, "/v1/acquire", nil)
		r.Header.Set("Authorization", header)
		id, err := auth.Authenticate(r)
		if err != nil {
			if id != "" || !errors.Is(err, ErrBadCredentials) && !errors.Is(err, ErrNoCredentials) {
				t.Fatalf("refusal %q without its sentinel, or with identity %q", err, id)
			}
			return
		}
		scheme, tok, _ := strings.Cut(header, " ")
		if !strings.EqualFold(scheme, "Bearer") || ids[tok] != id || id == "" {
			t.Fatalf("header %q authenticated as %q", header, id)
		}
	})
}
