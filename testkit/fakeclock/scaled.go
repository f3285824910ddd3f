package fakeclock

import (
	"fmt"
	"time"
)

// Bounds of a Scaled clock's factor: 1 is the machine's pace; above
// ScaledFactorMax a millisecond of the registry clock is under a
// microsecond of the machine's, finer than a timer or a store round trip
// resolves, and the clock's instants stop meaning anything to the
// parties that read them.
const (
	ScaledFactorMin = 1
	ScaledFactorMax = 1000
)

// Scaled is a clock that runs factor times the machine's pace from t0:
// a sustained test lives through the registry's real retentions (16
// minutes of request IDs) in seconds, with every setting at a value its
// range allows. Now moves smoothly (never in jumps) and After waits
// d/factor of the machine's time. Safe for concurrent use.
type Scaled struct {
	t0     time.Time
	start  time.Time
	factor time.Duration
}

// NewScaled returns a clock at t0 now, running factor times faster than
// the machine's; it refuses a factor outside [ScaledFactorMin,
// ScaledFactorMax], naming the range.
func NewScaled(t0 time.Time, factor int) (*Scaled, error) {
	if factor < ScaledFactorMin || factor > ScaledFactorMax {
		return nil, fmt.Errorf("fakeclock: scale factor %d: want %d to %d", factor, ScaledFactorMin, ScaledFactorMax)
	}
	return &Scaled{t0: t0, start: time.Now(), factor: time.Duration(factor)}, nil
}

// Now is t0 plus factor times the machine's time since NewScaled.
func (c *Scaled) Now() time.Time { return c.t0.Add(time.Since(c.start) * c.factor) }

// After fires once the clock has moved d: d/factor of the machine's
// time (at once if d <= 0).
func (c *Scaled) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.Now()
		return ch
	}
	time.AfterFunc(d/c.factor, func() { ch <- c.Now() })
	return ch
}

// Factor is how many times faster than the machine's the clock runs.
func (c *Scaled) Factor() int { return int(c.factor) }
