// This file proves the committed seed corpus of the bundle fuzz targets
// is exactly what the fixtures produce today (so a plain go test replays
// a genuine bundle, a genuine signed successor and their near-misses).
// Rewrite with: go test ./grant -run TestFuzzSeedCorpus -update
package grant

import (
	"strings"
	"testing"

	"github.com/fencegate/fencegate/testkit/fuzzseed"
)

func checkSeed(t *testing.T, target, name string, entry []byte) {
	t.Helper()
	fuzzseed.Check(t, *update, "go test ./grant -run TestFuzzSeedCorpus -update", target, name, entry)
}

func TestFuzzSeedCorpus(t *testing.T) {
	dir := t.TempDir()
	for name, b := range parseBundleSeeds(t, dir) {
		checkSeed(t, "FuzzParseBundle", name, fuzzseed.Entry(b))
	}
	for name, p := range batchProofSeeds(t) {
		checkSeed(t, "FuzzParseBatchProof", name, fuzzseed.Entry(p))
	}
	_, seeds := verifyUpdateSeeds(t, dir)
	for name, sb := range seeds {
		checkSeed(t, "FuzzVerifyUpdate", name, fuzzseed.Entry(sb.Bundle, sb.Proof))
	}
}

// batchProofSeeds are genuine batch proofs at the shapes' edges (a batch
// of one, an odd last leaf, a full tree) and near-misses of them.
func batchProofSeeds(t *testing.T) map[string]string {
	ed := testEdKey(t, "k1", 0)
	one, five, full := mustSignBatch(t, ed, batchGrants(1)), mustSignBatch(t, ed, batchGrants(5)), mustSignBatch(t, ed, batchGrants(BatchLeavesMax))
	return map[string]string{
		"one":             one[0],
		"odd-last":        five[4],
		"full-first":      full[0],
		"full-last":       full[BatchLeavesMax-1],
		"path-of-another": five[4][:len(five[4])-43] + five[0][len(five[0])-43:],
		"index-past-size": strings.Replace(five[4], ":4/5:", ":5/5:", 1),
	}
}
