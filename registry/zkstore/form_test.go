// This file proves an upgrade of the stored form on ZooKeeper: registries
// writing JSON and registries writing the compact form share one root,
// each acquiring and releasing what the other wrote, with no compare
// failing for want of the other's bytes, whether the write names the
// bytes its decision read (Write.RecordWasRaw) or not: this store
// compares on its side, against either form.
package zkstore

import (
	"context"
	"fmt"
	"testing"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/testkit/storetest"
	"github.com/fencegate/fencegate/wire"
)

func TestMixedStoredForms(t *testing.T) {
	server(t)
	ctx := context.Background()
	root := fmt.Sprintf("/test-%d", rootSeq.Add(1))
	open := func(opts ...Option) *Store {
		s, err := New(ctx, testConn, root, nil, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	old := storetest.NewRegistry(t, open(WithStoredForm(registry.FormJSON)), nil)
	upgraded := storetest.NewRegistry(t, open(), nil)
	blind := storetest.NewRegistry(t, rawDropper{open()}, nil)
	regs := []*registry.Registry{old, upgraded, blind}
	for i := range 9 {
		a, r := regs[i%3], regs[(i/3)%3] // every pairing
		id := fmt.Sprint("r", i)
		is, err := a.Acquire(ctx, "w", wire.AcquireRequest{Resource: "mixed/1", OperationID: "op", OperationClass: "c", RequestID: id, TTLMs: 30_000})
		if err != nil {
			t.Fatalf("cycle %d: acquire: %v", i, err)
		}
		if err := r.Release(ctx, "w", "mixed/1", is.Grant.Lease); err != nil {
			t.Fatalf("cycle %d: release: %v", i, err)
		}
		if got, err := upgraded.QueryRequest(ctx, "w", id); err != nil || got.Grant.Lease != is.Grant.Lease {
			t.Fatalf("cycle %d: query: %v", i, err)
		}
	}
}

// rawDropper forgets the bytes a write's decision read.
type rawDropper struct{ *Store }

func (s rawDropper) Commit(ctx context.Context, w registry.Write) (registry.CommitResult, error) {
	w.RecordWasRaw = nil
	return s.Store.Commit(ctx, w)
}
