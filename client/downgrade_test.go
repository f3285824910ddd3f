// This file proves the SDK's read/write lock on a real registry (in
// process): a read acquire's lease names NAME/_read and is kept under
// the lock's name; Downgrade keeps the fence, hands back a reader's
// lease HELD and ends the write lease RELEASED; from the call on, the
// write lease builds no envelope — even while the registry has not yet
// answered (the control: a transport that tries an envelope mid-call
// sees it refused; without the refusal it would be built); another
// session's reader waits out the write lease's statements.
package client_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/testkit/clienttest"
	"github.com/fencegate/fencegate/testkit/gatetest"
	"github.com/fencegate/fencegate/wire"
)

// midCall is registry.Direct whose Downgrade first runs during.
type midCall struct {
	registry.Direct
	during func()
}

func (m midCall) Downgrade(ctx context.Context, req wire.DowngradeRequest) (wire.Issued, error) {
	m.during()
	return m.Direct.Downgrade(ctx, req)
}

func TestSessionDowngrade(t *testing.T) {
	reg, err := clienttest.NewRegistry(client.SystemClock{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var w *client.Lease
	var midErr error
	s := client.NewSession(midCall{registry.Direct{Registry: reg.Registry, Owner: clienttest.OwnerA}, func() {
		_, midErr = w.Envelope(2, gatetest.Payload("mid-downgrade"))
	}}, client.Options{Rand: rand.New(rand.NewPCG(7, 7))})
	w, err = s.Acquire(ctx, clienttest.Request("op-rw"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Envelope(1, gatetest.Payload("before")); err != nil {
		t.Fatalf("writer's envelope: %v", err)
	}
	r, err := s.Downgrade(ctx, w)
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(midErr, client.ErrNotCertain) {
		t.Fatalf("an envelope built while the downgrade was in flight: %v", midErr)
	}
	if r.Grant().Resource != wire.ReadResource(clienttest.Resource) || r.Fence() != w.Fence() || r.State() != client.StateHeld {
		t.Fatalf("reader: %s fence %d %s", r.Grant().Resource, r.Fence(), r.State())
	}
	if w.State() != client.StateReleased {
		t.Fatalf("write lease after the downgrade: %s", w.State())
	}
	if got, ok := s.Lease(clienttest.Resource); !ok || got != r {
		t.Fatal("the reader's lease is not kept under the lock's name")
	}
	// Another session's reader: BUSY while the write lease's statements
	// may be fresh.
	other := client.NewSession(registry.Direct{Registry: reg.Registry, Owner: clienttest.OwnerB}, client.Options{})
	req := clienttest.Request("op-other")
	req.Mode = wire.ModeRead
	if _, err := other.Acquire(ctx, req); !errors.Is(err, wire.ErrBusy) {
		t.Fatalf("a second reader right after the downgrade: %v", err)
	}
	if err := r.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Lease(clienttest.Resource); ok {
		t.Fatal("a released reader still kept")
	}
	if _, err := s.Downgrade(ctx, r); !errors.Is(err, wire.ErrInvalid) {
		t.Fatalf("downgrading a reader: %v", err)
	}
}
