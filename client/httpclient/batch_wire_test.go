package httpclient

import (
	"reflect"
	"testing"

	"github.com/fencegate/fencegate/testkit/jsonkeys"
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
		if d := jsonkeys.FieldsDiffer(pair[0], pair[1]); d != "" {
			t.Fatal(d)
		}
	}
}
