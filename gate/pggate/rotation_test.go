// This file proves key rotation and revocation work in the database as
// they do for a trust bundle: a new key enrolled beside the old one, the
// old one verify-only (its grants still verify), then retired (they no
// longer do), and an epoch revocation refusing every older grant at once.
package pggate_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/pggate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

func TestKeyRotationAndRevocation(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	issuer := func(id string, epoch uint64) *gatetest.Issuer {
		k, err := grant.NewSigningKey(grant.AlgHMACSHA256, id, macSecret(id))
		if err != nil {
			t.Fatal(err)
		}
		return &gatetest.Issuer{Key: k, Epoch: epoch, Now: gatetest.T0, StatusValidFor: time.Minute}
	}
	enroll := func(id string, minE, maxE uint64, st grant.KeyState) {
		if err := pggate.SetKey(ctx, w.db, pggate.Key{ID: id, Secret: macSecret(id), MinEpoch: minE, MaxEpoch: maxE, State: st}); err != nil {
			t.Fatal(err)
		}
	}
	fence := uint64(0)
	write := func(iss *gatetest.Issuer) error {
		fence++
		m := iss.Mutation(gatetest.Writer{Resource: "rot/r", Owner: "worker-a", Lease: fmt.Sprintf("l-%d", fence), OperationID: "op", Fence: fence}, 1, "p")
		_, err := w.run(ctx, "worker-a", gatetest.T0, m, "p", nil)
		return err
	}
	old, next := issuer("m-old", 1), issuer("m-new", 2)
	enroll("m-old", 1, 0, grant.KeyActive)
	if err := write(old); err != nil {
		t.Fatalf("old key active: %v", err)
	}
	if err := write(next); !errors.Is(err, gate.ErrBadProof) {
		t.Fatalf("a key not enrolled yet: %v", err)
	}
	enroll("m-new", 2, 0, grant.KeyActive)
	enroll("m-old", 1, 1, grant.KeyVerifyOnly)
	for _, iss := range []*gatetest.Issuer{old, next} {
		if err := write(iss); err != nil {
			t.Fatalf("overlap, key %s: %v", iss.Key.KeyID, err)
		}
	}
	if err := write(issuer("m-old", 2)); !errors.Is(err, gate.ErrBadProof) {
		t.Fatalf("the old key signing an epoch past its maxEpoch: %v", err)
	}
	enroll("m-old", 1, 1, grant.KeyRetired)
	if err := write(old); !errors.Is(err, gate.ErrBadProof) {
		t.Fatalf("retired key: %v", err)
	}
	if err := pggate.SetRevokedBelow(ctx, w.db, 3); err != nil {
		t.Fatal(err)
	}
	if err := write(next); !errors.Is(err, gate.ErrEpochRevoked) {
		t.Fatalf("epoch 2 after revoking below 3: %v", err)
	}
	if err := pggate.SetRevokedBelow(ctx, w.db, 1); err != nil {
		t.Fatal(err)
	}
	if err := write(next); !errors.Is(err, gate.ErrEpochRevoked) {
		t.Fatalf("a revocation was lowered: %v", err)
	}
	if err := write(issuer("m-new", 3)); err != nil {
		t.Fatalf("the new key at epoch 3: %v", err)
	}
}
