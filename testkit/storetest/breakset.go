package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/wire"
)

// BreakFunc is an operator's break as the check drives it: Registry.Break,
// or a broken one for a negative control.
type BreakFunc func(ctx context.Context, resource string) (wire.BreakResponse, error)

// setBreakServedMax is how long the check gives the waiters a break
// serves: far below the set's TTL (setBreakTTLMs), so a member left held
// until its TTL is caught.
const (
	setBreakServedMax = 5 * time.Second
	setBreakTTLMs     = 60_000
)

// CheckSetBreak drives an operator's break of one lock set member on reg
// (any store) and returns what it found wrong, nil if nothing: set S holds
// {a, b} (TTL 60 s); a plain acquire W waits on b, and set T {a, c} waits
// at a's head. Breaking a must end the whole of S in one break — the
// answer names both members, b is handed to W at once (it holds b when
// the break answers), T is granted a and c (a set is never handed one
// member: its own acquire claims them) within 5 s, not after S's TTL,
// and S's renewal answers LEASE_BROKEN. A break that ends only the named
// member (the earlier Break) leaves b held by S: the check fails on it.
func CheckSetBreak(ctx context.Context, reg *registry.Registry, prefix string, brk BreakFunc) error {
	a, b, c := prefix+"/a", prefix+"/b", prefix+"/c"
	s, err := reg.AcquireSet(ctx, "set-s", wire.LockSetRequest{Members: []string{a, b}, OperationID: "op-s", OperationClass: "test", RequestID: "s", TTLMs: setBreakTTLMs})
	if err != nil {
		return fmt.Errorf("set S: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*setBreakServedMax)
	defer cancel()
	w := make(chan error, 1)
	go func() {
		_, err := reg.Acquire(ctx, "plain-w", acq(b, "w", uint64(2*setBreakServedMax/time.Millisecond)))
		w <- err
	}()
	if err := awaitWaiters(ctx, reg, b, 1); err != nil {
		return err
	}
	tSet := make(chan error, 1)
	go func() {
		_, err := reg.AcquireSet(ctx, "set-t", wire.LockSetRequest{Members: []string{a, c}, OperationID: "op-t", OperationClass: "test", RequestID: "t", TTLMs: 30_000, WaitMs: uint64(2 * setBreakServedMax / time.Millisecond)})
		tSet <- err
	}()
	if err := awaitWaiters(ctx, reg, a, 1); err != nil {
		return err
	}
	res, err := brk(ctx, a)
	if err != nil {
		return fmt.Errorf("break %s: %w", a, err)
	}
	st, err := reg.LockStatus(ctx, b)
	if err != nil {
		return err
	}
	if st.Holder == nil || st.Holder.Owner != "plain-w" {
		return fmt.Errorf("right after the break %s is held by %+v, want the waiter plain-w handed it in the break's write", b, st.Holder)
	}
	if st.Holder.Fence <= s.Members[1].Grant.FenceToken {
		return fmt.Errorf("the waiter's fence %d on %s is not above S's %d", st.Holder.Fence, b, s.Members[1].Grant.FenceToken)
	}
	var ended []string
	for _, e := range res.Ended {
		if e.Holder.Owner == "set-s" {
			ended = append(ended, e.Resource)
		}
	}
	if !slices.Equal(ended, []string{a, b}) {
		return fmt.Errorf("the break's answer names %v ended, want every member of S %v", ended, []string{a, b})
	}
	if res.Broken == nil || res.Broken.Lease != s.Members[0].Grant.Lease {
		return fmt.Errorf("the break's answer does not name %s's lease as broken: %+v", a, res.Broken)
	}
	for name, ch := range map[string]chan error{"plain W on " + b: w, "set T {a, c}": tSet} {
		select {
		case err := <-ch:
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		case <-time.After(setBreakServedMax):
			return fmt.Errorf("%s not served %v after the break (S's TTL is %d ms)", name, setBreakServedMax, setBreakTTLMs)
		}
	}
	leases := []wire.LeaseRequest{{Resource: a, Lease: s.Members[0].Grant.Lease}, {Resource: b, Lease: s.Members[1].Grant.Lease}}
	if _, err := reg.RenewSet(ctx, "set-s", leases); !errors.Is(err, wire.ErrLeaseBroken) {
		return fmt.Errorf("the renewal of set S after the break: %v, want LEASE_BROKEN", err)
	}
	return nil
}

// awaitWaiters waits until resource's queue holds n waiters.
func awaitWaiters(ctx context.Context, reg *registry.Registry, resource string, n int) error {
	for {
		st, err := reg.LockStatus(ctx, resource)
		if err != nil {
			return err
		}
		if len(st.Waiters) >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %d waiters, want %d: %w", resource, len(st.Waiters), n, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}
