// This file proves the table is built from the runs as documented: names
// lose their -N suffix, each figure is the median over runs, a paired
// benchmark's ratio is the median of its runs' ratios, the goal is judged
// on the ratio (or on fencegate's figure where the goal bounds it), and a
// peer whose benchmark reported nothing reads "not run", with no ratio
// and no verdict.
package main

import (
	"strings"
	"testing"
)

const sample = `goos: linux
BenchmarkWritePaired/sqlite-FULL-2   1500   1 ns/op   100.0 fenced-µs   1.30 fenced/plain   80.0 plain-µs
BenchmarkWritePaired/sqlite-FULL-2   1500   1 ns/op   120.0 fenced-µs   1.05 fenced/plain   90.0 plain-µs
BenchmarkWritePaired/sqlite-FULL-2   1500   1 ns/op   110.0 fenced-µs   1.20 fenced/plain   85.0 plain-µs
BenchmarkWALFrames/plain-2   1500   1 ns/op   1.01 frames/op
BenchmarkWALFrames/fenced-2   1500   1 ns/op   2.56 frames/op
`

func TestTableTakesMediansAndJudgesGoals(t *testing.T) {
	res, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := res.median("BenchmarkWritePaired/sqlite-FULL", "fenced-µs"); m != 110 {
		t.Fatalf("median fenced %v, want 110", m)
	}
	var b strings.Builder
	write(&b, []row{
		{label: "a", peer: "plain write", baseBench: "BenchmarkWritePaired/sqlite-FULL", baseUnit: "plain-µs", oursBench: "BenchmarkWritePaired/sqlite-FULL",
			oursUnit: "fenced-µs", ratioUnit: "fenced/plain", goal: "≤ 1.25×", goalMax: 1.25},
		{label: "b", peer: "plain write", baseBench: "BenchmarkWritePaired/sqlite-FULL", baseUnit: "plain-µs", oursBench: "BenchmarkWritePaired/sqlite-FULL",
			oursUnit: "fenced-µs", ratioUnit: "fenced/plain", goal: "≤ 1.10×", goalMax: 1.10},
		fenceRow("SQLite FULL", "BenchmarkWritePaired/sqlite-FULL"),
		{label: "pages", baseBench: "BenchmarkWALFrames/plain", baseUnit: "frames/op", oursBench: "BenchmarkWALFrames/fenced",
			oursUnit: "frames/op", goal: "≤ 1.6", goalMax: 1.6, goalOnOurs: true},
	}, res, nil)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 6 {
		t.Fatalf("%d lines:\n%s", len(lines), b.String())
	}
	for i, want := range []string{"| plain write | 85.0 plain-µs | 110 fenced-µs | 1.20× | ≤ 1.25× | yes |", "| 1.20× | ≤ 1.10× | no |",
		"| hand-rolled fence | not run | 110 fenced-µs | — | ≤ 1.15× |  |", "| — | 1.01 frames/op | 2.56 frames/op | 2.53× | ≤ 1.6 | no |"} {
		if !strings.Contains(lines[2+i], want) {
			t.Fatalf("row %d %q lacks %q", i, lines[2+i], want)
		}
	}
}
