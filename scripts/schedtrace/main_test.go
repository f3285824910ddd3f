package main

import (
	"bytes"
	"os"
	"regexp"
	"runtime"
	"runtime/trace"
	"sync"
	"syscall"
	"testing"
	"time"
)

const spinName = "github.com/fencegate/fencegate/scripts/schedtrace.spin"

// spin keeps a goroutine running for d.
func spin(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
	}
}

// traced runs work under the runtime's execution tracer and analyzes
// the trace, naming goroutines by frames of this package's spin.
func traced(t *testing.T, work func()) *report {
	t.Helper()
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Skipf("execution tracer busy: %v", err) // go test -trace owns it
	}
	work()
	trace.Stop()
	rep, err := analyze(&buf, window{}, regexp.MustCompile(`schedtrace\.spin$`))
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestOneSpinnerRunsAlone(t *testing.T) {
	rep := traced(t, func() {
		done := make(chan struct{})
		go func() { spin(60 * time.Millisecond); close(done) }()
		<-done
	})
	alone := rep.byState[state{running: 1}] + rep.byState[state{running: 1, syscall: true}]
	if share := alone / rep.wall; share < 0.5 {
		t.Errorf("one goroutine running with none runnable %.0f%% of the trace, want most of it", 100*share)
	}
	if share := rep.alone[spinName] / rep.aloneWall; share < 0.8 {
		t.Errorf("the spinner is %.0f%% of the time one goroutine ran alone, want nearly all (%v)", 100*share, rep.alone)
	}
}

func TestTwoSpinnersRunTogether(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs two processors")
	}
	rep := traced(t, func() {
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() { spin(60 * time.Millisecond) })
		}
		wg.Wait()
	})
	var two float64
	for s, ns := range rep.byState {
		if s.running == 2 {
			two += ns
		}
	}
	if share := two / rep.wall; share < 0.5 {
		t.Errorf("two goroutines running %.0f%% of the trace, want most of it", 100*share)
	}
	if share := rep.busy[spinName] / rep.wall; share < 1.0 {
		t.Errorf("the spinners ran %.0f%% of wall between them, want about 200%%", 100*share)
	}
}

func TestFdatasyncsAreCounted(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "sync")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const calls = 5
	rep := traced(t, func() {
		for range calls {
			f.Write([]byte("x"))
			if err := syscall.Fdatasync(int(f.Fd())); err != nil {
				t.Fatal(err)
			}
		}
	})
	if rep.syncs != calls {
		t.Errorf("%d fdatasync calls counted, want %d", rep.syncs, calls)
	}
}

func TestIdleStretchesSplitAcrossIntervals(t *testing.T) {
	var r report
	r.addIdle(150*time.Millisecond, 450*time.Millisecond, 100*time.Millisecond)
	r.addIdle(460*time.Millisecond, 470*time.Millisecond, 100*time.Millisecond)
	want := []time.Duration{0, 50, 100, 100, 60}
	if len(r.idleSteps) != len(want) {
		t.Fatalf("%d intervals, want %d: %v", len(r.idleSteps), len(want), r.idleSteps)
	}
	for i, ms := range want {
		if got := time.Duration(r.idleSteps[i]); got != ms*time.Millisecond {
			t.Errorf("interval %d idle %v, want %v", i, got, ms*time.Millisecond)
		}
	}
}
