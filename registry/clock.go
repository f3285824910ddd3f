package registry

import "time"

// Clock is the registry's only source of time. It alone judges lease
// expiry: a client's clock is never consulted. Production uses SystemClock;
// tests and the simulator inject a fake.
type Clock interface {
	Now() time.Time
}

// SystemClock reads the machine's wall clock.
type SystemClock struct{}

// Now returns time.Now.
func (SystemClock) Now() time.Time { return time.Now() }

// toMs is the registry's instant in Unix milliseconds; grant instants carry
// millisecond precision, so every decision works in whole milliseconds.
func toMs(t time.Time) int64 { return t.UnixMilli() }

// fromMs converts Unix milliseconds back to a UTC instant.
func fromMs(ms int64) time.Time { return time.UnixMilli(ms).UTC() }
