package httpclient

import (
	"reflect"
	"testing"

	"github.com/fencegate/fencegate/wire"
)

// The SDK writes batches with its own types (one encoding pass); their
// JSON fields must be wire's, name for name. Negative control: a renamed
// field fails here before a server could misread it.
func TestBatchRequestTypesMatchWire(t *testing.T) {
	for _, pair := range [][2]reflect.Type{
		{reflect.TypeFor[batchRequest](), reflect.TypeFor[wire.BatchRequest]()},
		{reflect.TypeFor[batchOperation](), reflect.TypeFor[wire.BatchOperation]()},
	} {
		ours, theirs := pair[0], pair[1]
		if ours.NumField() != theirs.NumField() {
			t.Fatalf("%v has %d fields, %v %d", ours, ours.NumField(), theirs, theirs.NumField())
		}
		for i := range ours.NumField() {
			if a, b := ours.Field(i).Tag.Get("json"), theirs.Field(i).Tag.Get("json"); a != b {
				t.Fatalf("%v field %d is %q, %v's %q", ours, i, a, theirs, b)
			}
		}
	}
}
