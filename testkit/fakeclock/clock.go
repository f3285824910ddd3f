// Package fakeclock is the one manual clock of the project's tests and
// simulator: it moves only when told, and fires timers set with After when
// Advance passes them.
// Scaled is the other: a clock that runs a fixed number of times faster
// than the machine's, for sustained runs that must live through the
// registry's real retentions in seconds.
package fakeclock

import (
	"sort"
	"sync"
	"time"
)

// Clock is a clock that moves only when told. It satisfies
// clock.Clock (which client.Clock names too), the
// time source every gate adapter takes. Safe for concurrent use.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	timers []timer
}

type timer struct {
	at time.Time
	ch chan time.Time
}

// New returns a clock at t.
func New(t time.Time) *Clock { return &Clock{now: t} }

// Now returns the fake instant.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// After fires once the clock has been advanced by d (at once if d <= 0).
func (c *Clock) After(d time.Duration) <-chan time.Time {
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
func (c *Clock) Advance(d time.Duration) {
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
func (c *Clock) Waiters() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}
