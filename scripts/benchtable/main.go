// Command benchtable turns the output of scripts/bench-all.sh's benchmark
// runs into one Markdown table: for every comparison the issue asks for,
// the peer a user would pick instead, its figure, fencegate's, their
// ratio, the goal and whether it holds, each a median over the runs (a
// paired benchmark's ratio is the median of its runs' own ratios). A
// peer whose benchmark reported nothing reads "not run". With a second
// file, the same benchmarks run on a base revision, it adds the ratio
// before.
//
//	go run ./scripts/benchtable bench-all/new.txt [bench-all/base.txt]
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// results are a run file's metrics: benchmark name → unit → values.
type results map[string]map[string][]float64

var procSuffix = regexp.MustCompile(`-\d+$`)

func parse(r io.Reader) (results, error) {
	res := results{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name := procSuffix.ReplaceAllString(f[0], "")
		if res[name] == nil {
			res[name] = map[string][]float64{}
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("%s: %q: %w", name, f[i], err)
			}
			res[name][f[i+1]] = append(res[name][f[i+1]], v)
		}
	}
	return res, sc.Err()
}

// median returns the median of bench's unit, and whether there was any.
func (r results) median(bench, unit string) (float64, bool) {
	vs := r[bench][unit]
	if len(vs) == 0 {
		return 0, false
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	return s[len(s)/2], true
}

// row is one comparison. Ratio is the benchmark's own paired ratio
// metric; empty means ours/baseline of the medians.
type row struct {
	label               string
	peer                string // what the baseline is, "" for none
	baseBench, baseUnit string
	oursBench, oursUnit string
	ratioUnit           string
	goal                string
	goalMax, goalMin    float64 // goal: ratio ≤ goalMax, ≥ goalMin (0: none)
	goalOnOurs          bool    // the goal bounds fencegate's figure, not the ratio
}

func (w row) ratio(r results) (float64, bool) {
	if _, peerRan := r.median(w.baseBench, w.baseUnit); w.baseBench != "" && !peerRan {
		return 0, false // a ratio without its peer's figure is not this comparison's
	}
	if w.ratioUnit != "" {
		return r.median(w.oursBench, w.ratioUnit)
	}
	b, ok1 := r.median(w.baseBench, w.baseUnit)
	o, ok2 := r.median(w.oursBench, w.oursUnit)
	if !ok1 || !ok2 || b == 0 {
		return 0, false
	}
	return o / b, true
}

func main() {
	if len(os.Args) < 2 || len(os.Args) > 3 {
		fmt.Fprintln(os.Stderr, "usage: benchtable NEW.txt [BASE.txt]")
		os.Exit(2)
	}
	now, err := load(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
	var before results
	if len(os.Args) == 3 {
		if before, err = load(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "benchtable:", err)
			os.Exit(1)
		}
	}
	write(os.Stdout, rows, now, before)
}

func load(path string) (results, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parse(f)
}

func write(w io.Writer, rows []row, now, before results) {
	head := "| comparison | peer | peer's figure | fencegate | ratio | goal | holds |"
	rule := "|---|---|---|---|---|---|---|"
	if before != nil {
		head = "| comparison | peer | peer's figure | fencegate | ratio | ratio before | goal | holds |"
		rule = "|---|---|---|---|---|---|---|---|"
	}
	fmt.Fprintln(w, head)
	fmt.Fprintln(w, rule)
	for _, r := range rows {
		cells := []string{r.label, orDash(r.peer), peerFigure(now, r), figure(now, r.oursBench, r.oursUnit)}
		ratio, ok := r.ratio(now)
		cells = append(cells, ratioText(ratio, ok))
		if before != nil {
			br, bok := r.ratio(before)
			cells = append(cells, ratioText(br, bok))
		}
		judged, jok := ratio, ok
		if r.goalOnOurs {
			judged, jok = now.median(r.oursBench, r.oursUnit)
		}
		cells = append(cells, r.goal, verdict(r, judged, jok))
		fmt.Fprintln(w, "| "+strings.Join(cells, " | ")+" |")
	}
}

// peerFigure is the peer's figure, or "not run" when its benchmark
// reported nothing (a peer this tree's benchmarks do not have yet).
func peerFigure(r results, w row) string {
	if w.baseBench == "" {
		return "—"
	}
	if _, ok := r.median(w.baseBench, w.baseUnit); !ok {
		return "not run"
	}
	return figure(r, w.baseBench, w.baseUnit)
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func figure(r results, bench, unit string) string {
	if bench == "" {
		return "—"
	}
	v, ok := r.median(bench, unit)
	if !ok {
		return "—"
	}
	return trim(v) + " " + unit
}

func ratioText(v float64, ok bool) string {
	if !ok {
		return "—"
	}
	return fmt.Sprintf("%.2f×", v)
}

func verdict(r row, v float64, ok bool) string {
	switch {
	case !ok || r.goalMax == 0 && r.goalMin == 0:
		return ""
	case r.goalMax != 0 && v <= r.goalMax, r.goalMin != 0 && v >= r.goalMin:
		return "yes"
	}
	return "no"
}

// trim prints v with a precision fit for its size.
func trim(v float64) string {
	switch {
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}
