// Package assert reports programmer errors: an invariant that the code
// itself must keep. A failed assertion panics; it is never used for an
// operating error (a timeout, a rejection), which is returned instead.
package assert

import "fmt"

// Failure is the value a failed assertion panics with, so tests can tell an
// assertion from any other panic.
type Failure struct{ Message string }

func (f Failure) Error() string { return "assertion failed: " + f.Message }

// That panics with a Failure when cond is false.
func That(cond bool, format string, args ...any) {
	if !cond {
		panic(Failure{Message: fmt.Sprintf(format, args...)})
	}
}

// Fail panics with a Failure.
func Fail(format string, args ...any) {
	panic(Failure{Message: fmt.Sprintf(format, args...)})
}

// Catch runs f and reports the Failure it panicked with, if any: for the
// tests that break an invariant on purpose to show its assertion fires.
// Any other panic is not caught.
func Catch(f func()) (failure *Failure) {
	defer func() {
		if r := recover(); r != nil {
			fl, ok := r.(Failure)
			if !ok {
				panic(r)
			}
			failure = &fl
		}
	}()
	f()
	return nil
}
