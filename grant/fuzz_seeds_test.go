// This file proves the committed seed corpus of the bundle fuzz targets
// is exactly what the fixtures produce today (so a plain go test replays
// a genuine bundle, a genuine signed successor and their near-misses).
// Rewrite with: go test ./grant -run TestFuzzSeedCorpus -update
package grant

import (
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
	_, seeds := verifyUpdateSeeds(t, dir)
	for name, sb := range seeds {
		checkSeed(t, "FuzzVerifyUpdate", name, fuzzseed.Entry(sb.Bundle, sb.Proof))
	}
}
