// Tests that the strict request decoder never panics, rejects only with
// BAD_REQUEST or TOO_LARGE, accepts no field given twice or in another
// letter case (checked by a key walker independent of the decoder), and
// that whatever it accepts survives a round trip unchanged (so nothing it
// accepts is silently dropped or merged); and that bearer authentication
// answers only the exact token of a table entry with its identity.
package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/testkit/jsonkeys"
	"github.com/fencegate/fencegate/wire"
)

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
		&wire.AcquireRequest{}, &wire.LeaseRequest{}, &wire.StatusRequest{}, &wire.RevokeEpochsRequest{},
		&wire.PolicyRequest{}, &wire.FloorRequest{}, &wire.ResourceRequest{},
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
			if p := jsonkeys.Problem(b, jsonNames(v)); p != "" {
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
