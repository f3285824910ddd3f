// Package scenariotext reads the lines of the project's scenario files
// (gate/testdata/scenarios, client/testdata/lease): a command, its words
// and key=value options, "#" comments, and "->" expectations.
package scenariotext

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Args are one line's words and options.
type Args struct {
	Words []string
	Opts  map[string]string
}

// Parse splits "cmd a b k=v" into its words and its options.
func Parse(s string) Args {
	a := Args{Opts: map[string]string{}}
	for _, f := range strings.Fields(s) {
		if k, v, ok := strings.Cut(f, "="); ok {
			a.Opts[k] = v
			continue
		}
		a.Words = append(a.Words, f)
	}
	return a
}

// Uint returns option k as a number, def when absent; a malformed value
// panics (a scenario file is test input the author must fix).
func (a Args) Uint(k string, def uint64) uint64 {
	v, ok := a.Opts[k]
	if !ok {
		return def
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		panic(fmt.Sprintf("scenario: %s=%s is not a number", k, v))
	}
	return n
}

// Line is one meaningful line of a scenario file.
type Line struct {
	N      int    // 1-based line number
	Text   string // without comment
	Expect bool   // the line starts with "->"
}

// Lines returns the file's non-empty lines with comments removed.
func Lines(r io.Reader) ([]Line, error) {
	var out []Line
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		text := sc.Text()
		if i := strings.Index(text, "#"); i >= 0 {
			text = text[:i]
		}
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		rest, expect := strings.CutPrefix(text, "->")
		if expect {
			text = strings.TrimSpace(rest)
		}
		out = append(out, Line{N: n, Text: text, Expect: expect})
	}
	return out, sc.Err()
}
