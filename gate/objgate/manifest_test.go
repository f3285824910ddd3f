// This file proves the manifest parser is strict: it accepts exactly what
// the encoder writes (fuzzed: whatever it accepts re-encodes to the same
// bytes) and refuses, with ErrManifest, every way a manifest can be
// malformed, non-canonical or inconsistent.
package objgate_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/objgate"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

// parser is a gate for the parser alone: it never reaches a store.
func parser(tb testing.TB) (*objgate.Gate, [][]byte) {
	g, err := objgate.OpenUnprobed(context.Background(), objgate.Config{Client: objgate.NopAPI{}, Bucket: "b",
		Policy: gate.Policy{Verifier: gatetest.NewIssuer("parse").Verifier}})
	if err != nil {
		tb.Fatal(err)
	}
	return g, objgate.SampleManifests(g, "obj/parse")
}

func TestParseManifestRoundTrip(t *testing.T) {
	g, ms := parser(t)
	for i, m := range ms {
		back, err := objgate.ParseManifest(g, "obj/parse", m)
		if err != nil || !bytes.Equal(back, m) {
			t.Fatalf("manifest %d: %v\n%q\n%q", i, err, m, back)
		}
	}
}

func TestParseManifestRefuses(t *testing.T) {
	g, ms := parser(t)
	inline, object := ms[2], ms[3] // a short-form receipt; content in an object
	edit := func(b []byte, old, new string) []byte {
		t.Helper()
		if !bytes.Contains(b, []byte(old)) {
			t.Fatalf("no %q in %q", old, b)
		}
		return bytes.Replace(b, []byte(old), []byte(new), 1)
	}
	header := bytes.SplitN(inline, []byte("\n"), 3)[1]
	first, second, _ := strings.Cut(strings.SplitN(string(header), `"receipts":[`, 2)[1], "},{")
	second = "{" + strings.SplitN(second, "}]", 2)[0] + "}" // {"segmentSeq":2,"payloadDigest":…,"acceptedAt":…}
	first += "}"
	rs := objgate.SampleReceipts("obj/parse")
	long2 := string(rs[1].AppendJSON(nil)) // receipt 2 in the whole form, which its run leaves short
	cases := map[string][]byte{
		"empty":               {},
		"another format":      edit(inline, "manifest 3", "manifest 4"),
		"no header end":       inline[:len("fencegate-manifest 3\n")+len(header)],
		"space in header":     edit(inline, `{"version":`, `{ "version":`),
		"unknown field":       edit(inline, `"version":`, `"extra":1,"version":`),
		"field order":         edit(inline, `"data":"","inlineBytes":9}`, `"inlineBytes":9,"data":""}`),
		"inline too long":     append(bytes.Clone(inline), 'x'),
		"inline too short":    inline[:len(inline)-1],
		"short form first":    edit(inline, first+",", ""),
		"long form repeated":  edit(inline, second, long2),
		"wrong resource":      edit(inline, `"resource":"obj/parse"`, `"resource":"obj/other"`),
		"receipt above state": edit(inline, `"lastSegmentSeq":2`, `"lastSegmentSeq":1`),
		"data elsewhere":      edit(object, `"data":"fencegate/obj%2Fparse/data/`, `"data":"fencegate/obj%2Fother/data/`),
		"bad digest":          edit(inline, `"payloadDigest":"sha256:`, `"payloadDigest":"md5:`),
		"altered receipt":     edit(inline, `"operationId":"op-1"`, `"operationId":"op-9"`),
		"re-cased in a whole": edit(inline, `"operationId":"op-1"`, `"OperationId":"op-1"`),
		"repeated in a short": edit(inline, `{"segmentSeq":2,`, `{"segmentSeq":2,"segmentSeq":2,`),
		"re-cased in a short": edit(inline, `{"segmentSeq":2,`, `{"SegmentSeq":2,`),
		"not an accept":       edit(inline, first, string(withOutcome(rs[0], gate.Quarantined))),
		"format 1 unknown":    []byte(`{"version":1,"state":{},"extra":true}`),
	}
	for name, b := range cases {
		_, err := objgate.ParseManifest(g, "obj/parse", b)
		t.Logf("%s: %v", name, err)
		if !errors.Is(err, objgate.ErrManifest) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// withOutcome is r's whole form with another outcome (and the id that
// goes with it).
func withOutcome(r gate.Receipt, o gate.Outcome) []byte {
	r.Outcome = o
	return r.AppendJSON(nil)
}

func FuzzParseManifest(f *testing.F) {
	g, ms := parser(f)
	for _, m := range ms {
		f.Add(m)
	}
	v2, err := os.ReadFile(filepath.Join("testdata", "legacy", "manifest-format2")) // as format 2's encoder wrote it
	if err != nil {
		f.Fatal(err)
	}
	f.Add(bytes.ReplaceAll(v2, []byte("obj/legacy"), []byte("obj/parse")))
	f.Add([]byte(`{"version":1,"state":{"resource":"obj/parse","mode":"enforce","highestFence":0,"root":"","lastSegmentSeq":0,"grant":"","grantIssuedAt":"","minPolicyGeneration":0,"paused":false,"pausedReason":"","floor":0,"floorAt":""}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		back, err := objgate.ParseManifest(g, "obj/parse", b)
		if err != nil {
			if !errors.Is(err, objgate.ErrManifest) {
				t.Fatalf("refused without ErrManifest: %v", err)
			}
			return
		}
		if strings.HasPrefix(string(b), "fencegate-manifest 3\n") && !bytes.Equal(back, b) {
			t.Fatalf("accepted a non-canonical manifest:\n%q\n%q", b, back)
		}
		if _, err := objgate.ParseManifest(g, "obj/parse", back); err != nil {
			t.Fatalf("its own encoding refused: %v", err)
		}
	})
}
