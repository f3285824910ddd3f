// This file proves the committed seed corpus of the bundle fuzz targets
// is exactly what the fixtures produce today (so a plain go test replays
// a genuine bundle, a genuine signed successor and their near-misses).
// Rewrite with: go test ./grant -run TestFuzzSeedCorpus -update
package grant

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// corpusEntry encodes string and []byte args in the Go fuzzing corpus
// file format.
func corpusEntry(args ...any) []byte {
	b := []byte("go test fuzz v1\n")
	for _, a := range args {
		switch v := a.(type) {
		case string:
			b = fmt.Appendf(b, "string(%q)\n", v)
		case []byte:
			b = fmt.Appendf(b, "[]byte(%q)\n", v)
		default:
			panic(fmt.Sprintf("corpusEntry: %T", a))
		}
	}
	return b
}

func checkSeed(t *testing.T, target, name string, entry []byte) {
	t.Helper()
	path := filepath.Join("testdata", "fuzz", target, name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, entry, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, entry) {
		t.Errorf("%s is not the fixture's seed (%v); rerun with -update", path, err)
	}
}

func TestFuzzSeedCorpus(t *testing.T) {
	dir := t.TempDir()
	for name, b := range parseBundleSeeds(t, dir) {
		checkSeed(t, "FuzzParseBundle", name, corpusEntry(b))
	}
	_, seeds := verifyUpdateSeeds(t, dir)
	for name, sb := range seeds {
		checkSeed(t, "FuzzVerifyUpdate", name, corpusEntry(sb.Bundle, sb.Proof))
	}
}
