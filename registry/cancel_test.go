// This file proves a waiting acquire whose caller gives up while its
// queue-joining commit is in flight leaves no ticket behind: the commit
// applies, its answer arrives after the caller's context ended, and the
// registry withdraws the ticket it never heard of. Negative control: the
// test fails (one waiter left until its deadline) when only a ticket the
// acquire knows it holds is withdrawn.
package registry_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/fencegate/fencegate/registry"
)

// answerTooLate applies the armed commit, then ends the caller's context
// and reports the outcome unknown, as a store whose answer arrived after
// the caller gave up.
type answerTooLate struct {
	registry.Store
	armed  atomic.Bool
	cancel context.CancelFunc
}

func (s *answerTooLate) Commit(ctx context.Context, w registry.Write) (registry.CommitResult, error) {
	res, err := s.Store.Commit(ctx, w)
	if err == nil && res.OK && s.armed.CompareAndSwap(true, false) {
		s.cancel()
		return registry.CommitResult{}, fmt.Errorf("outcome unknown: %w", context.Canceled)
	}
	return res, err
}

func TestWaiterCancelledDuringItsFirstCommitLeavesNoTicket(t *testing.T) {
	e := newEnv(t, nil)
	e.mustAcquire("holder", req("late/1", "h1"))
	wctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	st := &answerTooLate{Store: e.store, cancel: cancel}
	st.armed.Store(true)
	k, _ := testKey(t)
	regW, err := registry.New(st, e.reg.Config(), e.clock, k)
	if err != nil {
		t.Fatal(err)
	}
	wait := req("late/1", "w1")
	wait.WaitMs = 20_000
	if _, err := regW.Acquire(wctx, "waiter", wait); !errors.Is(err, context.Canceled) {
		t.Fatalf("acquire: %v, want the caller's cancellation", err)
	}
	if st.armed.Load() {
		t.Fatal("the queue-joining commit never went")
	}
	info, err := e.reg.Resource(e.ctx, "late/1")
	if err != nil {
		t.Fatal(err)
	}
	if info.Waiters != 0 {
		t.Fatalf("%d waiters after the caller gave up, want 0", info.Waiters)
	}
}
