// This file proves an operator's break of the primitives beyond one lock,
// over the memory store with the system clock: a lock set's member's
// break ends the whole set in one write (one commit, counted), each member handed on
// (storetest.CheckSetBreak, run on etcd and ZooKeeper by their packages);
// a read/write lock's readers, NAME/_read, are ended together and the
// queued writer is handed the lock; a semaphore's slot is ended alone and
// the queue's head takes it; a semaphore's own name is refused. Negative
// controls: the member-only break (Break before lock sets were broken
// whole) leaves the set's other member held, and ends no reader on
// NAME/_read; both checks fail on it.
package registry_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/memstore"
	"github.com/fencegate/fencegate/testkit/storetest"
	"github.com/fencegate/fencegate/wire"
)

func TestBreakSetMemberEndsTheWholeSet(t *testing.T) {
	reg := storetest.NewRegistry(t, memstore.New(), nil)
	if err := storetest.CheckSetBreak(t.Context(), reg, "brk", reg.Break); err != nil {
		t.Fatal(err)
	}
	old := storetest.NewRegistry(t, memstore.New(), nil)
	err := storetest.CheckSetBreak(t.Context(), old, "brk", func(ctx context.Context, resource string) (wire.BreakResponse, error) {
		return registry.BreakMemberOnly(old, ctx, resource)
	})
	if err == nil {
		t.Fatal("negative control: the member-only break passed the set-break check")
	}
	t.Logf("negative control (member-only break) caught: %v", err)
}

// commitCounter counts the commits that reach the store.
type commitCounter struct {
	registry.Store
	n atomic.Int64
}

func (c *commitCounter) Commit(ctx context.Context, w registry.Write) (registry.CommitResult, error) {
	c.n.Add(1)
	return c.Store.Commit(ctx, w)
}

func TestBreakSetIsOneCommit(t *testing.T) {
	store := &commitCounter{Store: memstore.New()}
	reg := storetest.NewRegistry(t, store, nil)
	set, err := reg.AcquireSet(t.Context(), "s", wire.LockSetRequest{Members: []string{"x/1", "x/2", "x/3"}, OperationID: "op", OperationClass: "test", RequestID: "s1", TTLMs: 30_000})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := reg.Break(t.Context(), "x/2/_read"); err != nil || len(res.Ended) != 0 || res.Status.Holder == nil || res.Status.Holder.Owner != "s" {
		t.Fatalf("a readers' break of a set's member: %+v %v; want nothing ended (the set's lease is a writer's)", res, err)
	}
	before := store.n.Load()
	res, err := reg.Break(t.Context(), "x/2")
	if err != nil {
		t.Fatal(err)
	}
	if n := store.n.Load() - before; n != 1 || len(res.Ended) != 3 || res.Broken == nil || res.Broken.Lease != set.Members[1].Grant.Lease {
		t.Fatalf("break of one member of three: %d commits, %d leases ended (broken %+v); want 1 commit ending all 3", n, len(res.Ended), res.Broken)
	}
}

// checkReadersBreak: readers r1, r2 share rw/doc and writer w waits;
// breaking rw/doc/_read ends both readers in one answer, w holds rw/doc
// when the break answers, with a fence above theirs, and each reader's
// renewal answers LEASE_BROKEN.
func checkReadersBreak(ctx context.Context, reg *registry.Registry, brk storetest.BreakFunc) error {
	var readers []wire.Issued
	for _, id := range []string{"r1", "r2"} {
		is, err := reg.Acquire(ctx, id, rwReq(id, true, 0))
		if err != nil {
			return err
		}
		readers = append(readers, is)
	}
	w := make(chan error, 1)
	go func() {
		_, err := reg.Acquire(ctx, "w", rwReq("w1", false, 20_000))
		w <- err
	}()
	for st, err := reg.LockStatus(ctx, "rw/doc"); len(st.Waiters) == 0; st, err = reg.LockStatus(ctx, "rw/doc") {
		if err != nil {
			return err
		}
		time.Sleep(5 * time.Millisecond)
	}
	res, err := brk(ctx, "rw/doc/_read")
	if err != nil {
		return err
	}
	if len(res.Ended) != 2 || res.Ended[0].Resource != "rw/doc/_read" || res.Ended[1].Resource != "rw/doc/_read" {
		return fmt.Errorf("the break ended %+v, want both readers", res.Ended)
	}
	st, err := reg.LockStatus(ctx, "rw/doc")
	if err != nil {
		return err
	}
	if st.Holder == nil || st.Holder.Owner != "w" || len(st.Readers) != 0 || st.Holder.Fence <= readers[0].Grant.FenceToken {
		return fmt.Errorf("after the break: holder %+v, readers %d; want the queued writer, fence above %d, alone", st.Holder, len(st.Readers), readers[0].Grant.FenceToken)
	}
	if err := <-w; err != nil {
		return fmt.Errorf("the queued writer: %w", err)
	}
	for _, r := range readers {
		if _, err := reg.Renew(ctx, r.Grant.Owner, r.Grant.Resource, r.Grant.Lease); !errors.Is(err, wire.ErrLeaseBroken) {
			return fmt.Errorf("reader %s's renewal: %v, want LEASE_BROKEN", r.Grant.Owner, err)
		}
	}
	return nil
}

func TestBreakReadersEndsEveryReaderAndServesTheWriter(t *testing.T) {
	reg := storetest.NewRegistry(t, memstore.New(), nil)
	if err := checkReadersBreak(t.Context(), reg, reg.Break); err != nil {
		t.Fatal(err)
	}
	// The writer's own name ends nothing once the writer holds... but a
	// break of rw/doc ends it: whoever holds.
	res, err := reg.Break(t.Context(), "rw/doc")
	if err != nil || len(res.Ended) != 1 || res.Ended[0].Holder.Owner != "w" || res.Ended[0].Resource != "rw/doc" {
		t.Fatalf("break rw/doc with the writer holding: %+v %v", res, err)
	}
	old := storetest.NewRegistry(t, memstore.New(), nil)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	err = checkReadersBreak(ctx, old, func(ctx context.Context, resource string) (wire.BreakResponse, error) {
		return registry.BreakMemberOnly(old, ctx, resource)
	})
	if err == nil {
		t.Fatal("negative control: the break of rw/doc/_read as a record of its own passed")
	}
	t.Logf("negative control (NAME/_read broken as a record of its own) caught: %v", err)
}

func TestBreakSemaphoreSlot(t *testing.T) {
	reg := storetest.NewRegistry(t, memstore.New(), nil)
	ctx := t.Context()
	long := func(id string, waitMs uint64) wire.AcquireRequest {
		r := semReq(id, 2, waitMs)
		r.TTLMs = 60_000
		return r
	}
	var held []wire.Issued
	for _, id := range []string{"p1", "p2"} {
		is, err := reg.Acquire(ctx, id, long(id, 0))
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, is)
	}
	third := make(chan wire.Issued, 1)
	go func() {
		is, err := reg.Acquire(ctx, "p3", long("p3", 20_000))
		if err != nil {
			t.Error(err)
		}
		third <- is
	}()
	for st, _ := reg.LockStatus(ctx, "pool/db"); len(st.Waiters) == 0; st, _ = reg.LockStatus(ctx, "pool/db") {
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := reg.Break(ctx, "pool/db"); !errors.Is(err, wire.ErrInvalid) {
		t.Fatalf("break of the semaphore's own name: %v, want INVALID (name a slot)", err)
	}
	slot := held[1].Grant.Resource
	res, err := reg.Break(ctx, slot)
	if err != nil || len(res.Ended) != 1 || res.Ended[0].Resource != slot || res.Ended[0].Holder.Owner != "p2" {
		t.Fatalf("break %s: %+v %v", slot, res, err)
	}
	select {
	case is := <-third:
		if is.Grant.Resource != slot || is.Grant.FenceToken <= held[1].Grant.FenceToken {
			t.Fatalf("the queue's head got %s fence %d, want %s above %d", is.Grant.Resource, is.Grant.FenceToken, slot, held[1].Grant.FenceToken)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the queue's head was not served 5 s after the slot's break (TTL 60 s)")
	}
	if _, err := reg.Renew(ctx, "p1", held[0].Grant.Resource, held[0].Grant.Lease); err != nil {
		t.Fatalf("the other permit: %v, want it untouched", err)
	}
	if _, err := reg.Renew(ctx, "p2", slot, held[1].Grant.Lease); !errors.Is(err, wire.ErrLeaseBroken) {
		t.Fatalf("the broken permit's renewal: %v, want LEASE_BROKEN", err)
	}
}
