// Package clock is fencegate's one time source. The registry's, the
// client's and the gate's decisions take their instants from a Clock;
// production passes System, tests and the simulator a clock they move
// (testkit/fakeclock, testkit/clienttest.FakeClock, the simulator's
// per-party clocks). Only the registry's clock judges lease expiry.
package clock

import "time"

// Clock is a source of instants and timers.
type Clock interface {
	// Now returns the clock's current instant.
	Now() time.Time
	// After sends the clock's time on the channel once d has passed by
	// this clock. d <= 0 fires at once.
	After(d time.Duration) <-chan time.Time
}

// System is the machine's clock.
type System struct{}

// Now returns time.Now.
func (System) Now() time.Time { return time.Now() }

// After is time.After.
func (System) After(d time.Duration) <-chan time.Time { return time.After(d) }
