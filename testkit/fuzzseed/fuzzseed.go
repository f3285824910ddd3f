// Package fuzzseed keeps fuzz seed corpora made by test fixtures in step
// with the fixtures: a package's TestFuzzSeedCorpus builds each seed,
// Check compares it with the committed file under
// testdata/fuzz/<Target>/<name> (or rewrites it when asked), so every
// plain `go test` replays the genuine inputs and their named near-misses,
// and a fixture change that silently alters a seed fails.
package fuzzseed

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Entry encodes args (string, []byte, uint64) in the Go fuzzing corpus
// file format.
func Entry(args ...any) []byte {
	b := []byte("go test fuzz v1\n")
	for _, a := range args {
		switch v := a.(type) {
		case string:
			b = fmt.Appendf(b, "string(%q)\n", v)
		case []byte:
			b = fmt.Appendf(b, "[]byte(%q)\n", v)
		case uint64:
			b = fmt.Appendf(b, "uint64(%d)\n", v)
		default:
			panic(fmt.Sprintf("fuzzseed: %T is not a corpus type here", a))
		}
	}
	return b
}

// Check compares entry with testdata/fuzz/<target>/<name> of the package
// under test, or writes it there when update is set; rerun says how to
// rewrite the corpus (the package's flag).
func Check(t *testing.T, update bool, rerun, target, name string, entry []byte) {
	t.Helper()
	path := filepath.Join("testdata", "fuzz", target, name)
	if update {
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
		t.Errorf("%s is not the fixture's seed (%v); rewrite with %s", path, err, rerun)
	}
}
