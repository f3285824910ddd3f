package registry

import (
	"time"
)

// The registry's only source of time is the clock.Clock given to New: it
// alone judges lease expiry, and the waiting acquire's timers and the
// request sweep run on it. A client's clock is never consulted.
// Production passes clock.System; tests and the simulator inject a fake.

// toMs is the registry's instant in Unix milliseconds; grant instants carry
// millisecond precision, so every decision works in whole milliseconds.
func toMs(t time.Time) int64 { return t.UnixMilli() }

// fromMs converts Unix milliseconds back to a UTC instant.
func fromMs(ms int64) time.Time { return time.UnixMilli(ms).UTC() }
