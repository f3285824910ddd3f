package client

import "time"

// Clock is the client's only source of time. It never judges expiry (the
// registry does); it decides when to renew, when the client stops on its
// own, and whether a status proof is still fresh enough to send.
// Production uses SystemClock; tests and the simulator inject a fake
// (see clienttest.FakeClock).
type Clock interface {
	Now() time.Time
	// After sends the clock's time on the channel once d has passed by
	// this clock. d <= 0 fires at once.
	After(d time.Duration) <-chan time.Time
}

// SystemClock is the machine's clock.
type SystemClock struct{}

// Now returns time.Now.
func (SystemClock) Now() time.Time { return time.Now() }

// After is time.After.
func (SystemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
