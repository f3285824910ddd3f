package chaosproc

import (
	"sync/atomic"
	"time"
)

// OffsetClock is a worker's clock: the machine's clock plus an offset the
// orchestrator can jump at any moment (a stepped NTP correction, a VM
// resumed with a stale clock). The system clock cannot be changed for one
// process, so the jump is applied here, to the only clock the client
// reads; timers still run at the real rate, as they do across a step.
type OffsetClock struct{ offsetNs atomic.Int64 }

// Now returns the real time plus the offset.
func (c *OffsetClock) Now() time.Time { return time.Now().Add(time.Duration(c.offsetNs.Load())) }

// After is time.After: a step of the wall clock does not move timers.
func (c *OffsetClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Set replaces the offset.
func (c *OffsetClock) Set(offset time.Duration) { c.offsetNs.Store(int64(offset)) }

// Offset returns the current offset.
func (c *OffsetClock) Offset() time.Duration { return time.Duration(c.offsetNs.Load()) }
