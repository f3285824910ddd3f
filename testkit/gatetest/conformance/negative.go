package conformance

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
)

// Fails runs the named case against the adapter newHarness builds and
// returns its first failure, or "" if it passed: an adapter's negative
// control (a mutant with one protection removed must fail the case that
// guards it) calls it and fails when it returns "".
func Fails(t *testing.T, newHarness Factory, name string) string {
	t.Helper()
	for _, c := range append(Cases(), BatchCases()...) {
		if c.Name == name {
			return failures(func(rec T) { c.Run(rec, NewEnv(t, newHarness)) })
		}
	}
	t.Fatalf("conformance: no case %q", name)
	return ""
}

// failures runs run against a recorder on a goroutine of its own (its
// Fatalf ends that goroutine) and returns the first failure, or "".
func failures(run func(T)) string {
	rec := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(rec)
	}()
	<-done
	if len(rec.failed) == 0 {
		return ""
	}
	return rec.failed[0]
}

// recorder is a T that remembers failures; Fatalf ends the case's
// goroutine as testing.T's does.
type recorder struct {
	mu     sync.Mutex
	failed []string
}

func (r *recorder) Helper()             {}
func (r *recorder) Logf(string, ...any) {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = append(r.failed, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}
