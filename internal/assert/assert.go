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
