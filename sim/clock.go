package sim

import (
	"math"
	"time"
)

// epochBase is simulated time zero on every party's clock before its
// offset: a fixed instant, so a run never reads the machine's clock.
var epochBase = time.Date(2026, 7, 19, 10, 0, 0, 0, time.UTC)

// partyClock is one party's view of time: true simulated time (ms since
// the round began) plus a fixed offset and a linear drift. The registry's
// clock is the reference (offset 0, no drift); a gate's or client's skew is
// its disagreement with it.
type partyClock struct {
	offsetMs float64 // at t = 0
	driftPpm float64 // parts per million; positive runs fast
}

// atMs returns the party's clock reading, in Unix ms, at true time tMs.
func (c partyClock) atMs(tMs int64) int64 {
	return epochBase.UnixMilli() + tMs + int64(c.offsetMs+float64(tMs)*c.driftPpm/1e6)
}

// at returns the party's clock reading at true time tMs.
func (c partyClock) at(tMs int64) time.Time { return time.UnixMilli(c.atMs(tMs)).UTC() }

// skewMsAt is how far this clock is ahead of the reference at tMs.
func (c partyClock) skewMsAt(tMs int64) int64 { return c.atMs(tMs) - epochBase.UnixMilli() - tMs }

// durationMs converts a duration the party measures on its own clock into
// true simulated ms (a slow clock makes its timers fire late), rounded up:
// a timer never fires before its party's clock has moved.
func (c partyClock) durationMs(localMs int64) int64 {
	return int64(math.Ceil(float64(localMs) / (1 + c.driftPpm/1e6)))
}

// registryClock adapts the round's notion of now to clock.Clock, the
// registry's clock.
type registryClock struct{ w *world }

func (c registryClock) Now() time.Time { return c.w.regClock.at(c.w.now) }

// After fires at once. The simulator runs every registry call to its end
// within one event, so a timer the registry sets inside a call (the
// backoff between compare-and-swap retries) takes no simulated time;
// waits that span events (a waiting acquire) are driven by the round's
// event queue through registry.Acquisition, never by this timer.
func (c registryClock) After(time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	ch <- c.Now()
	return ch
}
