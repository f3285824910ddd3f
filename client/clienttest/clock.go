// Package clienttest holds what tests and the simulator need to drive the
// client deterministically: a fake clock, a lossy transport over a real
// registry, and a registry fixture on the memory store.
package clienttest

import (
	"sort"
	"sync"
	"time"
)

// T0 is the instant fake clocks start at.
var T0 = time.Date(2026, 7, 19, 10, 0, 0, 0, time.UTC)

// FakeClock is a clock that moves only when told. It satisfies
// client.Clock, registry.Clock and sqlgate.Clock. Safe for concurrent use.
type FakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []timer
}

type timer struct {
	at time.Time
	ch chan time.Time
}

// NewFakeClock returns a clock at T0.
func NewFakeClock() *FakeClock { return &FakeClock{now: T0} }

// Now returns the fake instant.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// After fires once the clock has been advanced by d (at once if d <= 0).
func (c *FakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.timers = append(c.timers, timer{at: c.now.Add(d), ch: ch})
	return ch
}

// Advance moves the clock by d and fires every timer due, in time order.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	now := c.now
	sort.SliceStable(c.timers, func(i, j int) bool { return c.timers[i].at.Before(c.timers[j].at) })
	keep := c.timers[:0]
	var fire []timer
	for _, t := range c.timers {
		if t.at.After(now) {
			keep = append(keep, t)
		} else {
			fire = append(fire, t)
		}
	}
	c.timers = keep
	c.mu.Unlock()
	for _, t := range fire {
		t.ch <- now
	}
}

// Waiters returns how many timers are pending (for tests that must wait
// until a goroutine sleeps on the clock before advancing it).
func (c *FakeClock) Waiters() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}
