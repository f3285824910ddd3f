// This file proves the committed seed corpus of the envelope, job,
// receipt and answer fuzz targets is exactly what the fixtures sign and
// decide today, so every plain `go test` replays the genuine inputs and
// each near-miss; a fixture change that would silently turn a genuine
// seed into a near-miss fails here. Rewrite with: go test ./gate -run
// TestFuzzSeedCorpus -args -update-seeds
package gate_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"testing"

	"github.com/fencegate/fencegate/testkit/fuzzseed"
)

var updateSeeds = flag.Bool("update-seeds", false, "rewrite the fixture-made fuzz seeds in testdata/fuzz")

// checkSeed compares (or, with -update-seeds, writes) one corpus file.
func checkSeed(t *testing.T, target, name string, entry []byte) {
	t.Helper()
	fuzzseed.Check(t, *updateSeeds, "go test ./gate -run TestFuzzSeedCorpus -args -update-seeds", target, name, entry)
}

func TestFuzzSeedCorpus(t *testing.T) {
	fx := newEnvelopeFixture()
	for _, sd := range fx.seeds {
		m := sd.m
		checkSeed(t, "FuzzEnvelope", sd.name, fuzzseed.Entry(m.Resource, m.Lease, m.OperationID, m.FenceToken,
			m.SegmentSeq, m.Grant, m.GrantProof, m.Status, m.StatusProof))
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		checkSeed(t, "FuzzAuthenticate", sd.name, fuzzseed.Entry(b))
	}
	for name, b := range jobSeeds(t) {
		checkSeed(t, "FuzzDecodeJob", name, fuzzseed.Entry(b))
	}
	for name, b := range receiptSeeds(t) {
		checkSeed(t, "FuzzDecodeReceipt", name, fuzzseed.Entry(b))
	}
	for name, b := range answerSeeds(t) {
		checkSeed(t, "FuzzDecodeAnswer", name, fuzzseed.Entry(b))
	}
}

// jobSeeds are a genuine job's wire form and two near-misses the decoder
// must refuse.
func jobSeeds(t testing.TB) map[string][]byte {
	j, _ := jobOf(t, newFixture(t), 5, 1, 1, "op-a", "p")
	good, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	return map[string][]byte{
		"genuine":   good,
		"duplicate": bytes.Replace(good, []byte(`"jobSeq":1`), []byte(`"jobSeq":1,"jobSeq":2`), 1),
		"recased":   bytes.Replace(good, []byte(`"target"`), []byte(`"Target"`), 1),
	}
}
