package client

import "github.com/fencegate/fencegate/clock"

// Clock is the client's only source of time (the module's one clock
// interface). It never judges expiry (the registry does); it decides when
// to renew, when the client stops on its own, and whether a status proof
// is still fresh enough to send. Production uses SystemClock; tests and
// the simulator inject a fake (see clienttest.FakeClock).
type Clock = clock.Clock

// SystemClock is the machine's clock.
type SystemClock = clock.System
