// This file proves a store over Embedded.InProcess — the path serve's
// embedded default takes — calls the member without gRPC, passes the
// store conformance suite and shares the member with gRPC clients; that
// Close drains in-process calls and refuses later ones; that the member's
// own timeout reads as it does over gRPC; and that an in-process client
// without its Option fails with ErrNoConnection instead of crashing.
package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/testkit/storetest"
	"github.com/fencegate/fencegate/wire"
)

func TestConformanceInProcess(t *testing.T) {
	c, inProcess := testEtcd.InProcess()
	t.Cleanup(func() { c.Close() })
	if conn := c.ActiveConnection(); conn != nil {
		t.Fatalf("the in-process client has a gRPC connection to %s", conn.Target())
	}
	var o Options
	inProcess(&o)
	if kv := New(c, "/x/", inProcess).kv; kv != o.kv {
		t.Fatalf("the in-process store sends on %T, not the member's in-process server", kv)
	}
	storetest.Run(t, func(t *testing.T) registry.Store {
		return New(c, fmt.Sprintf("/test-%d/", prefixSeq.Add(1)), inProcess)
	})
}

// TestInProcessCommitsAreTheMembers: what the in-process store commits,
// a gRPC client of the same member reads, and the other way round.
func TestInProcessCommitsAreTheMembers(t *testing.T) {
	ctx := context.Background()
	c, inProcess := testEtcd.InProcess()
	defer c.Close()
	prefix := fmt.Sprintf("/test-%d/", prefixSeq.Add(1))
	reg := storetest.NewRegistry(t, New(c, prefix, inProcess), nil)
	other := storetest.NewRegistry(t, New(testClient, prefix), nil)
	is, err := reg.Acquire(ctx, "a", acquireReq("r", "1", 0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err = other.Acquire(ctx, "b", acquireReq("r", "2", 0)); !errors.Is(err, wire.ErrBusy) {
		t.Fatalf("over gRPC, the resource the in-process store granted is %v, want held", err)
	}
	if err := other.Release(ctx, "a", "r", is.Grant.Lease); err != nil {
		t.Fatalf("release over gRPC of the in-process grant: %v", err)
	}
	if _, err := reg.Acquire(ctx, "b", acquireReq("r", "3", 0)); err != nil {
		t.Fatalf("in process after the gRPC release: %v", err)
	}
}

// TestInProcessClientNeedsItsOption: New over an in-process client alone
// has no connection to send its reads and commits on; each says so.
func TestInProcessClientNeedsItsOption(t *testing.T) {
	c, _ := testEtcd.InProcess()
	defer c.Close()
	s := New(c, fmt.Sprintf("/test-%d/", prefixSeq.Add(1)))
	if _, err := s.Read(context.Background(), "r", nil); !errors.Is(err, ErrNoConnection) {
		t.Fatalf("read without the option: %v, want ErrNoConnection", err)
	}
}

// TestCloseDrainsInProcessCalls: the gate Close shuts waits for a call in
// flight and refuses the calls after it with the stopped member's error.
func TestCloseDrainsInProcessCalls(t *testing.T) {
	var g callGate
	if err := g.enter(); err != nil {
		t.Fatal(err)
	}
	drained := make(chan struct{})
	go func() { g.shutAndDrain(); close(drained) }()
	select {
	case <-drained:
		t.Fatal("the gate shut with a call in flight")
	case <-time.After(50 * time.Millisecond):
	}
	g.exit()
	<-drained
	if err := g.enter(); rpctypes.Error(err) != rpctypes.ErrStopped {
		t.Fatalf("a call after Close: %v, want %v", err, rpctypes.ErrStopped)
	}
}

// TestClosedMemberRefusesInProcessStore: after Close, the in-process
// store's reads fail as a stopped member's do over gRPC, and the registry
// calls the store unavailable.
func TestClosedMemberRefusesInProcessStore(t *testing.T) {
	e, err := StartEmbedded(context.Background(), t.TempDir(), EmbeddedOptions{UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	c, inProcess := e.InProcess()
	defer c.Close()
	s := New(c, "/closed/", inProcess)
	if _, err := s.Read(context.Background(), "r", nil); err != nil {
		t.Fatal(err)
	}
	e.Close()
	if _, err := s.Read(context.Background(), "r", nil); !errors.Is(err, rpctypes.ErrStopped) {
		t.Fatalf("read after Close: %v, want %v", err, rpctypes.ErrStopped)
	}
	reg := storetest.NewRegistry(t, s, nil)
	if _, err := reg.Acquire(context.Background(), "a", acquireReq("r", "1", 0)); !errors.Is(err, wire.ErrUnavailable) {
		t.Fatalf("acquire after Close: %v, want %v", err, wire.ErrUnavailable)
	}
}

// timeoutKV answers every transaction with a bare context error, as the
// member's own request timeout reaches an in-process caller.
type timeoutKV struct{ pb.KVClient }

func (timeoutKV) Txn(context.Context, *pb.TxnRequest, ...grpc.CallOption) (*pb.TxnResponse, error) {
	return nil, context.DeadlineExceeded
}

// TestMemberTimeoutIsNotTheCallers: a deadline the member hit while the
// caller's context lives is the store's unavailability (retryable), as
// over gRPC, never the caller's own timeout.
func TestMemberTimeoutIsNotTheCallers(t *testing.T) {
	s := New(testClient, fmt.Sprintf("/test-%d/", prefixSeq.Add(1)), func(o *Options) { o.kv = timeoutKV{} })
	_, err := s.Read(context.Background(), "r", nil)
	if err == nil || errors.Is(err, context.DeadlineExceeded) || status.Code(errors.Unwrap(err)) != codes.DeadlineExceeded {
		t.Fatalf("read: %v, want a DeadlineExceeded status, not the caller's context error", err)
	}
	reg := storetest.NewRegistry(t, s, nil)
	if _, err := reg.Acquire(context.Background(), "a", acquireReq("r", "1", 0)); !errors.Is(err, wire.ErrUnavailable) {
		t.Fatalf("acquire: %v, want %v", err, wire.ErrUnavailable)
	}
}
