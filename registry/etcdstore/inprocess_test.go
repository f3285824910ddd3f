// This file proves a store over Embedded.InProcess — the path serve's
// embedded default takes — passes the store conformance suite and shares
// the member with gRPC clients, and that an in-process client without
// its Option fails with ErrNoConnection instead of crashing.
package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/testkit/storetest"
	"github.com/fencegate/fencegate/wire"
)

func TestConformanceInProcess(t *testing.T) {
	c, inProcess := testEtcd.InProcess()
	t.Cleanup(func() { c.Close() })
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
// has no connection to send on; every call says so.
func TestInProcessClientNeedsItsOption(t *testing.T) {
	c, _ := testEtcd.InProcess()
	defer c.Close()
	s := New(c, fmt.Sprintf("/test-%d/", prefixSeq.Add(1)))
	if _, err := s.Read(context.Background(), "r", nil); !errors.Is(err, ErrNoConnection) {
		t.Fatalf("read without the option: %v, want ErrNoConnection", err)
	}
}
