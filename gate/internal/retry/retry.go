// Package retry holds the adapters' wait between attempts that lost an
// optimistic race (a WATCH that fired, a conditional write refused).
package retry

import (
	"context"
	"time"
)

// StepsMax bounds the wait: after StepsMax lost races it stops growing.
const StepsMax = 10

// Backoff waits min(attempt, StepsMax) × step, returning at once for
// attempt 0 (with ctx's error, if any) and early when ctx ends.
func Backoff(ctx context.Context, attempt int, step time.Duration) error {
	d := time.Duration(min(attempt, StepsMax)) * step
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
