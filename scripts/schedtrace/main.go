// Command schedtrace reads a Go execution trace (go test -trace) and
// tells how busy the process kept its processors, and who ran alone: the
// view of a closed-loop benchmark that a CPU profile cannot give. A CPU
// profile says where CPU time went; when a benchmark is not CPU-bound it
// does not say why the rest was idle. This does, from the scheduler's own
// events:
//
//	go test -c -o /tmp/fg.test ./cmd/fencegate
//	/tmp/fg.test -test.run '^$' -test.bench '^BenchmarkServeThroughput64Only$' -test.benchtime 5x -test.trace /tmp/serve.trace
//	go run ./scripts/schedtrace -skip 300ms /tmp/serve.trace
//
// It prints, over the window [skip, until) of the trace:
//   - the share of wall time with 0, 1, 2, ... goroutines running, and
//     with how many more runnable (ready, waiting for a processor), and
//     whether a goroutine was in a system call meanwhile (a blocking call
//     such as fdatasync holds its processor until the runtime hands the
//     processor off);
//   - fdatasync calls: how many and how long;
//   - per goroutine, its running time named by the innermost frame of
//     interest where it stopped running (blocked, was preempted, or
//     entered a system call): its share of the window spent running,
//     and its share of the time it was the only goroutine running with
//     none runnable (the pipeline's serial stages).
//
// With -timeline, it first prints the share of each interval of the
// whole trace with no goroutine running, to find the window.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"text/tabwriter"
	"time"

	"golang.org/x/exp/trace"
)

func main() {
	skip := flag.Duration("skip", 0, "ignore the trace's first `duration` (setup)")
	until := flag.Duration("until", 0, "stop at this `duration` from the trace's start (0: its end)")
	focus := flag.String("focus", `fencegate|etcd|raft|net/http|bbolt|runtime\.gcBgMarkWorker`, "a goroutine is named by the innermost frame whose function matches this `regexp`")
	top := flag.Int("top", 12, "goroutine names to print per table")
	step := flag.Duration("timeline", 0, "also print, per `interval` of the whole trace, the share of it with no goroutine running (to find the window)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: schedtrace [flags] TRACE\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	re, err := regexp.Compile(*focus)
	if err != nil {
		fmt.Fprintln(os.Stderr, "schedtrace: -focus:", err)
		os.Exit(2)
	}
	f, err := os.Open(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "schedtrace:", err)
		os.Exit(1)
	}
	defer f.Close()
	r, err := analyze(f, window{skip: *skip, until: *until, step: *step}, re)
	if err != nil {
		fmt.Fprintln(os.Stderr, "schedtrace:", err)
		os.Exit(1)
	}
	if *step > 0 {
		for i, idle := range r.idleSteps {
			fmt.Printf("%8v  none running %3.0f%%\n", time.Duration(i)*(*step), 100*idle/float64(*step))
		}
		fmt.Println()
	}
	r.print(os.Stdout, *top)
}

// window is the part of a trace analyzed, as offsets from its first
// event, and the interval of the whole trace's idle timeline (0: none).
type window struct{ skip, until, step time.Duration }

func (w window) has(d time.Duration) bool { return d >= w.skip && (w.until == 0 || d < w.until) }

// state is how many goroutines were running and runnable, capped for the
// table, and whether one was in a system call.
type state struct {
	running, runnable int
	syscall           bool
}

// runnableCap folds "this many or more runnable" into one row.
const runnableCap = 3

// report is what analyze measured; times are nanoseconds of wall time.
type report struct {
	wall      float64
	byState   map[state]float64
	busy      map[string]float64 // running time per goroutine name
	alone     map[string]float64 // time as the only goroutine running, none runnable
	aloneWall float64
	syncs     int
	syncTime  float64
	idleSteps []float64 // per window.step from the trace's start: time with none running
}

// analyze replays the trace's goroutine state transitions.
func analyze(rd io.Reader, w window, focus *regexp.Regexp) (*report, error) {
	tr, err := trace.NewReader(rd)
	if err != nil {
		return nil, err
	}
	rep := &report{byState: map[state]float64{}, busy: map[string]float64{}, alone: map[string]float64{}}
	var (
		first, last       trace.Time
		running, runnable int
		insys             int
		runSet            = map[trace.GoID]bool{}
		name              = map[trace.GoID]string{}
		pending           = map[trace.GoID]*runTime{} // run time not yet named
		syncSince         = map[trace.GoID]trace.Time{}
	)
	for {
		ev, err := tr.ReadEvent()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		t := ev.Time()
		if first == 0 {
			first = t
		}
		if last != 0 && w.step > 0 && running == 0 {
			rep.addIdle(time.Duration(last-first), time.Duration(t-first), w.step)
		}
		if last != 0 && w.has(time.Duration(last-first)) {
			d := float64(t - last)
			rep.wall += d
			rep.byState[state{running: running, runnable: min(runnable, runnableCap), syscall: insys > 0}] += d
			for g := range runSet {
				pending[g].busy += d
			}
			if running == 1 && runnable == 0 {
				rep.aloneWall += d
				for g := range runSet {
					pending[g].alone += d
				}
			}
		}
		last = t
		if ev.Kind() != trace.EventStateTransition {
			continue
		}
		st := ev.StateTransition()
		if st.Resource.Kind != trace.ResourceGoroutine {
			continue
		}
		id := st.Resource.Goroutine()
		from, to := st.Goroutine()
		if from == to {
			continue // a goroutine in a system call whose processor was handed off
		}
		// A goroutine's running time is named where it stopped running:
		// transitions to Running carry no stack of their own.
		if n := frameOf(st.Stack, focus); n != "" {
			name[id] = n
		}
		switch from {
		case trace.GoRunning:
			running--
			delete(runSet, id)
			pending[id].addTo(rep, name[id])
		case trace.GoRunnable:
			runnable--
		case trace.GoSyscall:
			insys--
			if t0, ok := syncSince[id]; ok {
				delete(syncSince, id)
				if w.has(time.Duration(t0 - first)) {
					rep.syncs++
					rep.syncTime += float64(t - t0)
				}
			}
		}
		switch to {
		case trace.GoRunning:
			running++
			runSet[id] = true
			pending[id] = &runTime{}
		case trace.GoRunnable:
			runnable++
		case trace.GoSyscall:
			insys++
			if innermost(st.Stack) == "syscall.Fdatasync" {
				syncSince[id] = t
			}
		}
	}
	for g := range runSet {
		pending[g].addTo(rep, name[g])
	}
	return rep, nil
}

// runTime is a goroutine's time in the window since it last started
// running: all of it, and the part it ran alone.
type runTime struct{ busy, alone float64 }

func (p *runTime) addTo(rep *report, name string) {
	if p == nil {
		return // running when the trace began: its time before that is not in it
	}
	rep.busy[name] += p.busy
	rep.alone[name] += p.alone
}

// addIdle adds the idle stretch [from, to) to the intervals of length
// step it covers.
func (r *report) addIdle(from, to, step time.Duration) {
	for from < to {
		i := int(from / step)
		end := min(to, time.Duration(i+1)*step)
		for len(r.idleSteps) <= i {
			r.idleSteps = append(r.idleSteps, 0)
		}
		r.idleSteps[i] += float64(end - from)
		from = end
	}
}

// frameOf is the innermost function of stk that focus matches.
func frameOf(stk trace.Stack, focus *regexp.Regexp) string {
	for f := range stk.Frames() {
		if focus.MatchString(f.Func) {
			return f.Func
		}
	}
	return ""
}

// innermost is the function stk was in.
func innermost(stk trace.Stack) string {
	for f := range stk.Frames() {
		return f.Func
	}
	return ""
}

func (r *report) print(out io.Writer, top int) {
	if r.wall == 0 {
		fmt.Fprintln(out, "no events in the window")
		return
	}
	fmt.Fprintf(out, "window: %.0f ms of wall time\n\n", r.wall/1e6)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "running\trunnable\tof wall\twith a goroutine in a system call\t")
	maxRunning := 0
	for s := range r.byState {
		maxRunning = max(maxRunning, s.running)
	}
	for run := 0; run <= maxRunning; run++ {
		for q := 0; q <= runnableCap; q++ {
			plain, sys := r.byState[state{run, q, false}], r.byState[state{run, q, true}]
			label := fmt.Sprint(q)
			if q == runnableCap {
				label += "+"
			}
			fmt.Fprintf(tw, "%d\t%s\t%.1f%%\t%.1f%%\t\n", run, label, 100*(plain+sys)/r.wall, 100*sys/r.wall)
		}
	}
	tw.Flush()
	if r.syncs > 0 {
		fmt.Fprintf(out, "\nfdatasync: %d calls, %.0f us each on average, in progress %.1f%% of wall\n", r.syncs, r.syncTime/float64(r.syncs)/1e3, 100*r.syncTime/r.wall)
	}
	fmt.Fprintf(out, "\nrunning, share of wall (named by where each run stopped):\n")
	printShares(out, r.busy, r.wall, top)
	fmt.Fprintf(out, "\nthe only goroutine running with none runnable (%.1f%% of wall), share of that time:\n", 100*r.aloneWall/r.wall)
	printShares(out, r.alone, r.aloneWall, top)
}

func printShares(out io.Writer, m map[string]float64, total float64, top int) {
	type share struct {
		name string
		ns   float64
	}
	var s []share
	for n, ns := range m {
		if n == "" {
			n = "(no frame of interest)"
		}
		s = append(s, share{n, ns})
	}
	sort.Slice(s, func(i, j int) bool { return s[i].ns > s[j].ns })
	for i, e := range s {
		if i == top || total == 0 {
			break
		}
		fmt.Fprintf(out, "  %5.1f%%  %s\n", 100*e.ns/total, e.name)
	}
}
