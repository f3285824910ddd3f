// Proves the objects objgate wrote before manifest format 3 stay
// readable: a format 2 manifest (receipts in its own whole and short
// forms), a format 1 manifest, a receipt batch and a format 1 receipt
// object, as the earlier encoders wrote them (testdata/legacy), read to
// the same receipts, and a format 2 manifest is written back as format 3.
// Format 2's entries are decoded strictly.
package objgate

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/fencegate/fencegate/gate"
)

func legacy(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "legacy", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestLegacyObjectsStayReadable(t *testing.T) {
	g := parserGate(t)
	const res = "obj/legacy"
	h, err := g.parseManifest(res, legacy(t, "manifest-format2"))
	if err != nil {
		t.Fatal(err)
	}
	if len(h.receipts) != 5 || h.st.HighestFence != 2 || h.st.LastSegmentSeq != 2 || string(h.inline) != "legacy content\n" {
		t.Fatalf("format 2: %d receipts, state %+v, content %q", len(h.receipts), h.st, h.inline)
	}
	held := make([]gate.Receipt, len(h.receipts))
	for i, hr := range h.receipts {
		held[i] = hr.r
	}
	batch, err := parseBatch(legacy(t, "receipts-batch"), res, seqName(1, 3))
	if err != nil || len(batch) != 3 {
		t.Fatalf("batch: %d receipts, %v", len(batch), err)
	}
	one, err := parseBatch(legacy(t, "receipt-format1"), res, seqName(1, 1))
	if err != nil {
		t.Fatal(err)
	}
	v1, err := g.parseManifest(res, legacy(t, "manifest-format1"))
	if err != nil || len(v1.receipts) != 1 {
		t.Fatalf("format 1: %v", err)
	}
	for i, r := range append(batch, one[0], v1.receipts[0].r) {
		want := held[[]int{0, 1, 2, 0, 4}[i]]
		if r != want {
			t.Errorf("object receipt %d:\n%+v\nwant %+v", i, r, want)
		}
	}

	b := h.encode()
	again, err := g.parseManifest(res, b)
	if err != nil || !bytes.HasPrefix(b, []byte(manifestMagic)) || len(again.receipts) != 5 || again.receipts[4].r != held[4] {
		t.Fatalf("format 2 written back as format 3: %v\n%.60q", err, b)
	}
}

func TestFormat2EntriesAreStrict(t *testing.T) {
	g := parserGate(t)
	good := legacy(t, "manifest-format2")
	for name, edit := range map[string][2]string{
		"repeated field":  {`"fenceToken":1,`, `"fenceToken":1,"fenceToken":1,`},
		"re-cased field":  {`"operationId":"op-1"`, `"OperationId":"op-1"`},
		"unknown field":   {`"mode":"enforce"}`, `"mode":"enforce","id":"x"}`},
		"short first":     {`{"fenceToken":1,`, `{`},
		"bad instant":     {`.001Z"`, `Z"`},
		"bad mode":        {`"mode":"enforce"}`, `"mode":"off"}`},
		"string fence":    {`"fenceToken":1,`, `"fenceToken":"1",`},
		"another's state": {`"resource":"obj/legacy"`, `"resource":"obj/other"`},
	} {
		b := bytes.Replace(good, []byte(edit[0]), []byte(edit[1]), 1)
		if bytes.Equal(b, good) {
			t.Fatalf("%s: the edit changed nothing", name)
		}
		if _, err := g.parseManifest("obj/legacy", b); !errors.Is(err, ErrManifest) {
			t.Errorf("%s: %v, want ErrManifest", name, err)
		}
	}
}
