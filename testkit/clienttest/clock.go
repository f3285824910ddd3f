// Package clienttest holds what tests and the simulator need to drive the
// client deterministically: a fake clock, a lossy transport over a real
// registry, and a registry fixture on the memory store.
package clienttest

import (
	"time"

	"github.com/fencegate/fencegate/testkit/fakeclock"
)

// T0 is the instant fake clocks start at.
var T0 = time.Date(2026, 7, 19, 10, 0, 0, 0, time.UTC)

// FakeClock is a clock that moves only when told (fakeclock.Clock). It
// satisfies clock.Clock (client.Clock, the registry's, every gate
// adapter's Config.Clock). Safe for concurrent use.
type FakeClock = fakeclock.Clock

// NewFakeClock returns a clock at T0.
func NewFakeClock() *FakeClock { return fakeclock.New(T0) }
