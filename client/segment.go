package client

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/fencegate/fencegate/gate"
)

// Named defaults of SegmentOptions.
const (
	// SegmentParallelDefault is how many segments are computed at once.
	SegmentParallelDefault = 4
	// SegmentWindowFactor: by default computation runs at most
	// SegmentWindowFactor × Parallel segments ahead of submission, which
	// bounds the memory held by computed, unsubmitted segments.
	SegmentWindowFactor = 2
)

// SegmentOptions bound a segmented run.
type SegmentOptions struct {
	// Parallel bounds concurrent computations. Optional, defaults to
	// SegmentParallelDefault.
	Parallel int
	// Window bounds how many segments may be computed but not yet
	// submitted (including those being computed). Optional, defaults to
	// SegmentWindowFactor × Parallel; raised to Parallel if below it.
	Window int
}

// AbandonedError: the resource answered that a newer owner (a higher
// fence) has written, or the registry went backwards; every later segment
// was abandoned, not retried. It wraps ErrSuperseded and the cause.
type AbandonedError struct {
	LastAccepted uint64 // the last segment the resource accepted (0: none)
	Abandoned    uint64 // the first segment not submitted successfully
	Cause        error
}

func (e *AbandonedError) Error() string {
	return fmt.Sprintf("client: superseded: last accepted segment %d, segments from %d abandoned: %v", e.LastAccepted, e.Abandoned, e.Cause)
}

// Unwrap returns ErrSuperseded and the cause.
func (e *AbandonedError) Unwrap() []error { return []error{ErrSuperseded, e.Cause} }

// SegmentError: computing or submitting a segment failed for another
// reason (the lease was lost, a timeout — possibly MUTATION_UNKNOWN). The
// run stopped; nothing after Seq was submitted.
type SegmentError struct {
	Seq          uint64
	LastAccepted uint64
	Submitting   bool // false: the computation failed
	Cause        error
}

func (e *SegmentError) Error() string {
	what := "computing"
	if e.Submitting {
		what = "submitting"
	}
	return fmt.Sprintf("client: segment %d: %s: %v (last accepted %d)", e.Seq, what, e.Cause, e.LastAccepted)
}

// Unwrap returns the cause.
func (e *SegmentError) Unwrap() error { return e.Cause }

// Superseded reports whether a resource's answer means a newer owner (a
// higher fence) exists or the fence went backwards: STALE_OWNER,
// FENCE_REGRESSION, RESOURCE_PAUSED, or any rejection that reports a
// highestFence above the mutation's fence.
func Superseded(err error) bool {
	if errors.Is(err, gate.ErrStaleOwner) || errors.Is(err, gate.ErrFenceRegression) || errors.Is(err, gate.ErrResourcePaused) {
		return true
	}
	var r *gate.Rejection
	return errors.As(err, &r) && r.HighestFence > r.FenceToken
}

// RunSegments computes segments 1..n, up to opts.Parallel at a time, and
// submits them strictly in order: segment i is submitted only after
// segment i−1 was accepted. Long tasks share one grant's operation root;
// submit typically builds lease.Envelope(seq, digest) and sends it.
//
// It stops at the first failure and never retries: a superseded answer
// returns *AbandonedError, any other *SegmentError. On return no
// computation is running. compute must honour ctx.
func RunSegments[T any](ctx context.Context, n uint64, opts SegmentOptions,
	compute func(ctx context.Context, seq uint64) (T, error),
	submit func(ctx context.Context, seq uint64, v T) error) (lastAccepted uint64, err error) {
	if opts.Parallel <= 0 {
		opts.Parallel = SegmentParallelDefault
	}
	if opts.Window <= 0 {
		opts.Window = SegmentWindowFactor * opts.Parallel
	}
	opts.Window = max(opts.Window, opts.Parallel)
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()

	type result struct {
		v   T
		err error
	}
	sem := make(chan struct{}, opts.Parallel)
	pending := make(map[uint64]chan result, opts.Window)
	launched := uint64(0)
	for seq := uint64(1); seq <= n; seq++ {
		for launched < n && launched < seq-1+uint64(opts.Window) {
			launched++
			ch := make(chan result, 1)
			pending[launched] = ch
			wg.Add(1)
			go func(s uint64) {
				defer wg.Done()
				select {
				case sem <- struct{}{}:
				case <-ctx.Done():
					ch <- result{err: ctx.Err()}
					return
				}
				defer func() { <-sem }()
				v, err := compute(ctx, s)
				ch <- result{v, err}
			}(launched)
		}
		r := <-pending[seq]
		delete(pending, seq)
		if r.err != nil {
			return lastAccepted, &SegmentError{Seq: seq, LastAccepted: lastAccepted, Cause: r.err}
		}
		if err := submit(ctx, seq, r.v); err != nil {
			if Superseded(err) {
				return lastAccepted, &AbandonedError{LastAccepted: lastAccepted, Abandoned: seq, Cause: err}
			}
			return lastAccepted, &SegmentError{Seq: seq, LastAccepted: lastAccepted, Submitting: true, Cause: err}
		}
		lastAccepted = seq
	}
	return lastAccepted, nil
}
