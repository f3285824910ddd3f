// This file measures Decode against its natural baseline, encoding/json's
// Unmarshal with unknown fields refused, on a registry acquire request:
//
//	go test ./internal/strictjson -run '^$' -bench Decode -benchmem -count 5
package strictjson_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/fencegate/fencegate/internal/strictjson"
)

// acquireRequest has wire.AcquireRequest's shape (the package may not
// import wire).
type acquireRequest struct {
	Resource       string `json:"resource"`
	OperationID    string `json:"operationId,omitempty"`
	OperationClass string `json:"operationClass,omitempty"`
	RequestID      string `json:"requestId"`
	TTLMs          uint64 `json:"ttlMs"`
	WaitMs         uint64 `json:"waitMs,omitempty"`
}

var acquireBody = []byte(`{"resource":"payments/ledger-7","operationId":"op-2f9c","operationClass":"settle","requestId":"r-8d3b1c0e5a","ttlMs":30000}`)

func BenchmarkDecode(b *testing.B) {
	b.Run("strictjson", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var v acquireRequest
			if err := strictjson.Decode(acquireBody, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var v acquireRequest
			d := json.NewDecoder(bytes.NewReader(acquireBody))
			d.DisallowUnknownFields()
			if err := d.Decode(&v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
