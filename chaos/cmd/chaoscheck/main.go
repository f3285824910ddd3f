// Command chaoscheck replays a kept chaos run's history through the
// suite's checker alone (porcupine over the model, and the counts the
// history shows), with no processes and no database:
//
//	go run ./chaos/cmd/chaoscheck [-seed N] [-vis DIR] DIR
//
// DIR is a run directory the suite kept (it prints it when a run fails,
// or keeps every run under FENCEGATE_CHAOS_KEEP), or its events/
// directory; the store members' logs beside them (store/) are read too,
// for the transactions ZooKeeper lost and the forks it served (a failure
// on a store that forked names the fork). It prints the report and exits 1 when the history fails the
// run (a verdict other than Ok, or a violation count), 2 on bad usage.
// The database counts (stale accepts, receipts against effects) need the
// run's PostgreSQL database and are not replayed.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"

	"github.com/fencegate/fencegate/chaos"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run is the command on args, printing to stdout and stderr; it returns
// the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("chaoscheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seed := fs.Uint64("seed", 0, "the run's seed, for the report (default: read from DIR's name, seedN-…)")
	vis := fs.String("vis", os.TempDir(), "where porcupine's visualization of an Illegal history is written")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: chaoscheck [-seed N] [-vis DIR] DIR (a kept run directory, or its events/)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		if err == nil {
			fs.Usage()
		}
		return 2
	}
	dir := fs.Arg(0)
	events := filepath.Join(dir, "events")
	if st, err := os.Stat(events); err != nil || !st.IsDir() {
		events = dir
	}
	if *seed == 0 {
		*seed = seedOf(dir)
	}
	store := filepath.Join(dir, "store") // the members' logs, when the run kept them
	if events == dir {
		store = filepath.Join(dir, "..", "store")
	}
	rep, err := chaos.CheckHistory(events, store, *seed, false, *vis)
	if err != nil {
		fmt.Fprintln(stderr, "chaoscheck:", err)
		return 2
	}
	fmt.Fprint(stdout, rep)
	if f := rep.Failures(true); len(f) > 0 {
		for _, l := range f {
			fmt.Fprintln(stdout, "FAIL:", l)
		}
		return 1
	}
	fmt.Fprintln(stdout, "PASS: the history passes the checker")
	return 0
}

var seedName = regexp.MustCompile(`seed(\d+)`)

// seedOf reads N from a directory named seedN-…, 0 otherwise.
func seedOf(dir string) uint64 {
	m := seedName.FindStringSubmatch(filepath.Base(filepath.Clean(dir)))
	if m == nil {
		return 0
	}
	n, _ := strconv.ParseUint(m[1], 10, 64)
	return n
}
