// This file proves an upgrade of the stored form, replica by replica:
// registries writing JSON and registries writing the compact form share
// one etcd prefix, each acquiring and releasing what the other wrote,
// with no compare failing for want of the other's bytes. The negative
// control drops the bytes a decision read (Write.RecordWasRaw): etcd then
// compares the record in the writer's own form, which never matches a
// record the other form wrote, and the write ends in ErrConflict.
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

func TestMixedStoredForms(t *testing.T) {
	ctx := context.Background()
	prefix := fmt.Sprintf("/test-%d/", prefixSeq.Add(1))
	old := storetest.NewRegistry(t, New(testClient, prefix, WithStoredForm(registry.FormJSON)), nil)
	upgraded := storetest.NewRegistry(t, New(testClient, prefix), nil)
	regs := []*registry.Registry{old, upgraded}
	for i := range 8 {
		a, r := regs[i%2], regs[(i/2)%2] // every pairing, each side first
		is, err := a.Acquire(ctx, "w", wire.AcquireRequest{Resource: "mixed/1", OperationID: "op", OperationClass: "c", RequestID: fmt.Sprint("r", i), TTLMs: 30_000})
		if err != nil {
			t.Fatalf("cycle %d: acquire: %v", i, err)
		}
		if err := r.Release(ctx, "w", "mixed/1", is.Grant.Lease); err != nil {
			t.Fatalf("cycle %d: release: %v", i, err)
		}
		for _, q := range regs {
			if got, err := q.QueryRequest(ctx, "w", fmt.Sprint("r", i)); err != nil || got.Grant.Lease != is.Grant.Lease {
				t.Fatalf("cycle %d: query: %v", i, err)
			}
		}
	}
}

// TestMixedFormsNeedTheReadBytes is the negative control.
func TestMixedFormsNeedTheReadBytes(t *testing.T) {
	ctx := context.Background()
	prefix := fmt.Sprintf("/test-%d/", prefixSeq.Add(1))
	old := storetest.NewRegistry(t, New(testClient, prefix, WithStoredForm(registry.FormJSON)), nil)
	blind := storetest.NewRegistry(t, rawDropper{New(testClient, prefix)}, nil)
	is, err := old.Acquire(ctx, "w", wire.AcquireRequest{Resource: "mixed/1", OperationID: "op", OperationClass: "c", RequestID: "r1", TTLMs: 30_000})
	if err != nil {
		t.Fatal(err)
	}
	if err := blind.Release(ctx, "w", "mixed/1", is.Grant.Lease); !errors.Is(err, wire.ErrConflict) {
		t.Fatalf("release of a JSON record comparing the compact form: %v, want ErrConflict", err)
	}
}

// rawDropper forgets the bytes a write's decision read.
type rawDropper struct{ *Store }

func (s rawDropper) Commit(ctx context.Context, w registry.Write) (registry.CommitResult, error) {
	w.RecordWasRaw = nil
	return s.Store.Commit(ctx, w)
}
