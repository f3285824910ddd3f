// Holds the README's examples to the programs here: every Go block the
// README marks with `<!-- example: examples/PATH -->` must be that file,
// byte for byte, so what a reader copies is what this module builds and
// runs against a real registry. A README that marks no example fails too.
package examples_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var exampleBlock = regexp.MustCompile("(?s)<!-- example: examples/(\\S+) -->\n```go\n(.*?)```")

func TestReadmeShowsTheExamplesAsBuilt(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := exampleBlock.FindAllStringSubmatch(string(readme), -1)
	if len(blocks) == 0 {
		t.Fatal("the README marks no example: nothing holds its code to what builds")
	}
	for _, b := range blocks {
		file, err := os.ReadFile(filepath.FromSlash(b[1]))
		if err != nil {
			t.Errorf("the README shows examples/%s, which does not exist: %v", b[1], err)
			continue
		}
		if b[2] != string(file) {
			t.Errorf("the README's examples/%s differs from the file; copy the file into the README:\n%s", b[1], firstDifference(b[2], string(file)))
		}
	}
}

// firstDifference names the first line where the README and the file part.
func firstDifference(readme, file string) string {
	r, f := strings.Split(readme, "\n"), strings.Split(file, "\n")
	for i := range min(len(r), len(f)) {
		if r[i] != f[i] {
			return "line " + strconv.Itoa(i+1) + ":\n  README: " + r[i] + "\n  file:   " + f[i]
		}
	}
	return "one is longer than the other"
}
