// Tests that the strict request decoder never panics, rejects only with
// BAD_REQUEST or TOO_LARGE, and that whatever it accepts survives a round
// trip unchanged (so nothing it accepts is silently dropped or merged).
package httpapi

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

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
