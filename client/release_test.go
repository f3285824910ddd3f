// This file proves release and refusal paths: effects stop before a
// release is sent; a lost release answer is retried until the registry
// confirms (RELEASED); a release or renewal the registry refuses because
// the grant already ended (expired, epoch revoked) ends in EXPIRED.
package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/testkit/clienttest"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

func TestLostReleaseAnswerIsRetriedUntilConfirmed(t *testing.T) {
	f := clienttest.NewEnv(t, nil)
	w := f.Worker(clienttest.OwnerA, 60, true)
	l, err := f.Acquire(f.Ctx, w, clienttest.Request("op-1"))
	if err != nil {
		t.Fatal(err)
	}
	held := l.Ctx()
	w.Net.Fault = func(op, _ string) clienttest.Fault { return clienttest.DropResponse } // released, answer lost
	ctx, cancel := context.WithCancel(f.Ctx)
	w.Net.After = func(string) { cancel() } // the caller gives up after one try
	if err := l.Release(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("release with a lost answer: %v", err)
	}
	if l.State() != client.StateUnknown || held.Err() == nil {
		t.Fatalf("after a lost release: %s, ctx %v; want OWNERSHIP_UNKNOWN, cancelled", l.State(), held.Err())
	}
	if _, err := l.Envelope(1, gatetest.Payload("x")); !errors.Is(err, client.ErrNotCertain) {
		t.Fatalf("envelope while releasing: %v", err)
	}
	w.Net.Fault, w.Net.After = nil, nil
	f.Clock.Advance(client.QueryIntervalDefault)
	if st := l.Tick(f.Ctx); st != client.StateReleased {
		t.Fatalf("the retried release: %s, want RELEASED", st)
	}
	if n := len(w.Net.CallsOf("Renew")); n != 0 {
		t.Fatalf("%d renewals while releasing: a lease being released must not be renewed", n)
	}
}

func TestReleaseAfterRegistryExpiryEndsExpired(t *testing.T) {
	f := clienttest.NewEnv(t, nil)
	w := f.Worker(clienttest.OwnerA, 61, true)
	l, err := f.Acquire(f.Ctx, w, clienttest.Request("op-1"))
	if err != nil {
		t.Fatal(err)
	}
	f.Clock.Advance(clienttest.TTL + time.Second) // paused; Release is the first thing it does after
	if err := l.Release(f.Ctx); err != nil {
		t.Fatal(err)
	}
	if l.State() != client.StateExpired {
		t.Fatalf("release of an expired lease: %s, want EXPIRED", l.State())
	}
}

func TestRevokedEpochEndsLeaseAtNextRefresh(t *testing.T) {
	f := clienttest.NewEnv(t, nil)
	w := f.Worker(clienttest.OwnerA, 62, true)
	l, err := f.Acquire(f.Ctx, w, clienttest.Request("op-1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Reg.RevokeEpochsBelow(f.Ctx, clienttest.Epoch+1); err != nil {
		t.Fatal(err)
	}
	f.TickUntil(l, 250*time.Millisecond, func() bool { return l.State() != client.StateHeld })
	if l.State() != client.StateExpired {
		t.Fatalf("after revocation: %s, want EXPIRED", l.State())
	}
	last := w.Rec.Lines()[len(w.Rec.Lines())-1]
	if last != "RENEWING -RenewRefused-> EXPIRED" {
		t.Fatalf("last transition %q", last)
	}
}
