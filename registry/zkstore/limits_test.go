package zkstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/testkit/storetest"
	"github.com/fencegate/fencegate/testkit/zktest"
	"github.com/fencegate/fencegate/wire"
)

// juteTestBytes is the test ensemble's jute.maxbuffer: a record with
// about 45 waiters exceeds it.
const juteTestBytes = 8 << 10

// juteRun is what queueing waiters on one resource until a commit is
// refused showed.
type juteRun struct {
	queued  int     // waiters in the queue when the refusal came
	refusal error   // the first waiter's error
	others  []error // errors of waiters already queued, after it
}

// queueUntilRefused holds "big" and queues waiters on it, one at a
// time, until one is answered with an error; then it gives the queued
// ones a moment to fail with it too (they must not). The waiters end
// with the test.
func queueUntilRefused(t *testing.T, ctx context.Context, addr, root string, opts ...Option) (juteRun, *Store) {
	conn, err := Dial(ctx, ClientConfig{Servers: []string{addr}, DialTimeout: 20 * time.Second}, root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	st, err := New(ctx, conn, root, nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	reg := storetest.NewRegistry(t, st, nil)
	if _, err := reg.Acquire(ctx, "holder", wire.AcquireRequest{Resource: "big", OperationID: "op", OperationClass: "test", RequestID: "h", TTLMs: 60_000}); err != nil {
		t.Fatal(err)
	}
	wctx, endWaiters := context.WithCancel(ctx)
	t.Cleanup(endWaiters)
	errs := make(chan error, 200)
	var run juteRun
	for i := 0; i < 200 && run.refusal == nil; i++ {
		go func() {
			_, err := reg.Acquire(wctx, fmt.Sprintf("waiter-%03d-with-a-long-identity", i), wire.AcquireRequest{
				Resource: "big", OperationID: "op", OperationClass: "test", RequestID: fmt.Sprintf("w%03d-0123456789abcdef0123456789abcdef", i), TTLMs: 60_000, WaitMs: 60_000})
			errs <- err
		}()
		for deadline := time.Now().Add(5 * time.Second); ; {
			v, err := reg.LockStatus(ctx, "big")
			if err == nil && len(v.Waiters) == i+1 {
				run.queued = i + 1
				break
			}
			select {
			case run.refusal = <-errs:
			case <-time.After(20 * time.Millisecond):
			}
			if run.refusal != nil || time.Now().After(deadline) {
				break
			}
		}
	}
	if run.refusal == nil {
		t.Fatalf("200 waiters queued (%d seen) under a jute.maxbuffer of %d bytes", run.queued, juteTestBytes)
	}
	time.Sleep(500 * time.Millisecond)
	for len(errs) > 0 {
		run.others = append(run.others, <-errs)
	}
	return run, st
}

// TestRequestAboveJuteMaxBufferIsRefused: on a ZooKeeper whose
// jute.maxbuffer is 8 KiB, waiters queue on one resource until the
// commit that would queue the next is above it: that waiter is answered
// STORE_FULL naming jute.maxbuffer, unsent; every waiter already queued
// stays queued (no call on the session fails), the holder renews, and
// another resource is granted. The control runs the same with the store
// told a limit far above the server's: the oversize request reaches
// ZooKeeper, which drops the connection, and the queued waiters' calls
// fail with it.
func TestRequestAboveJuteMaxBufferIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := zktest.Start(t, zktest.Options{JuteMaxBufferBytes: juteTestBytes})

	run, st := queueUntilRefused(t, ctx, srv.Addr, "/jute", WithJuteMaxBuffer(juteTestBytes))
	t.Logf("refused after %d waiters: %v", run.queued, run.refusal)
	if wire.CodeOf(run.refusal) != "STORE_FULL" || !strings.Contains(run.refusal.Error(), "jute.maxbuffer") {
		t.Fatalf("the waiter past the limit: %v (%s); want STORE_FULL naming jute.maxbuffer", run.refusal, wire.CodeOf(run.refusal))
	}
	if run.queued < 10 || len(run.others) > 0 {
		t.Fatalf("%d waiters queued; after the refusal queued ones failed: %v", run.queued, run.others)
	}
	reg := storetest.NewRegistry(t, st, nil)
	v, err := reg.LockStatus(ctx, "big")
	if err != nil || v.Holder == nil || len(v.Waiters) != run.queued {
		t.Fatalf("after the refusal: %+v, %v; want the holder and %d waiters", v, err, run.queued)
	}
	if _, err := reg.Renew(ctx, "holder", "big", v.Holder.Lease); err != nil {
		t.Fatalf("the holder's renewal: %v", err)
	}
	if _, err := reg.Acquire(ctx, "other", wire.AcquireRequest{Resource: "small", OperationID: "op", OperationClass: "test", RequestID: "o", TTLMs: 60_000}); err != nil {
		t.Fatalf("another resource: %v", err)
	}

	ctl, _ := queueUntilRefused(t, ctx, srv.Addr, "/jute-control", WithJuteMaxBuffer(1<<30))
	t.Logf("control: refused after %d waiters: %v; then %d queued calls failed", ctl.queued, ctl.refusal, len(ctl.others))
	if wire.CodeOf(ctl.refusal) == "STORE_FULL" || len(ctl.others) == 0 && !errors.Is(ctl.refusal, wire.ErrUnavailable) {
		t.Fatalf("control: %v, %v: the oversize request did not reach ZooKeeper's limit", ctl.refusal, ctl.others)
	}
}
