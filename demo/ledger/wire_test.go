// Proves the ledger's answers kept their bytes when its receipts and
// answers moved to gate's JSON form: a write response and a receipt
// query's answer, as the ledger wrote them before (testdata), decode
// and encode again byte for byte, so clients built against the earlier
// ledger read the new one.
package ledger_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/fencegate/fencegate/demo/ledger"
	"github.com/fencegate/fencegate/gate"
)

func TestWireFormKeptItsBytes(t *testing.T) {
	for name, v := range map[string]any{"write-response.json": &ledger.WriteResponse{}, "answer.json": &gate.Answer{}} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		again, err := json.Marshal(v)
		if err != nil || !bytes.Equal(again, b) {
			t.Errorf("%s: %v\nbefore %s\nnow    %s", name, err, b, again)
		}
	}
}
