// This file proves the gate inside PostgreSQL uses a key ID once,
// forever (schema version 5): a key that comes back with another secret,
// after its row was removed (DELETE or TRUNCATE by the owner), or in a
// state before one it reached is refused (FG021, ErrKeyReused, with the
// registry's codes) and nothing changes; issue 43's resurrection (gk-1
// retired, removed, enrolled again active with another secret) is refused
// and the resurrected key's proofs stay BAD_PROOF. The negative control
// drops the trigger: the same steps then enroll the new secret and its
// proofs are accepted. The history's digests are grant's SecretDigest.
// An upgrade from version 4 records the keys enrolled before it, and
// ends with the catalog and history a fresh install has.
package pggate_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/pggate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

func hmacKey(t testing.TB, id string, secret []byte) *grant.SigningKey {
	t.Helper()
	k, err := grant.NewSigningKey(grant.AlgHMACSHA256, id, secret)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func otherSecret(id string) []byte { return macSecret(id + "/another") }

func TestKeyIDIsUsedOnceInTheDatabase(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	enroll := func(id string, secret []byte, st grant.KeyState) error {
		return pggate.SetKey(ctx, w.db, pggate.Key{ID: id, Secret: secret, MinEpoch: 1, State: st})
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(enroll("k-a", macSecret("k-a"), grant.KeyActive))
	must(enroll("k-a", macSecret("k-a"), grant.KeyActive)) // the same again: nothing moves
	must(enroll("k-a", macSecret("k-a"), grant.KeyVerifyOnly))
	must(enroll("k-b", macSecret("k-b"), grant.KeyRetired))
	must(enroll("k-c", macSecret("k-c"), grant.KeyActive))
	must(enroll("k-d", macSecret("k-d"), grant.KeyActive))
	if _, err := w.db.ExecContext(ctx, `DELETE FROM fencegate.keys WHERE key_id = 'k-c'`); err != nil {
		t.Fatal(err)
	}
	if _, err := w.db.ExecContext(ctx, `UPDATE fencegate.keys SET key_id = 'k-e' WHERE key_id = 'k-d'`); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		id     string
		secret []byte
		state  grant.KeyState
		code   string
	}{
		{"another secret", "k-a", otherSecret("k-a"), grant.KeyVerifyOnly, "KEY_OTHER_SECRET"},
		{"verify-only → active", "k-a", macSecret("k-a"), grant.KeyActive, "KEY_STATE_BACK"},
		{"retired → active", "k-b", macSecret("k-b"), grant.KeyActive, "KEY_STATE_BACK"},
		{"retired → verify-only", "k-b", macSecret("k-b"), grant.KeyVerifyOnly, "KEY_STATE_BACK"},
		{"deleted, back as it was", "k-c", macSecret("k-c"), grant.KeyActive, "KEY_DROPPED"},
		{"deleted, back with another secret", "k-c", otherSecret("k-c"), grant.KeyActive, "KEY_OTHER_SECRET"},
		{"renamed away, back", "k-d", macSecret("k-d"), grant.KeyActive, "KEY_DROPPED"},
	} {
		err := enroll(c.id, c.secret, c.state)
		if !errors.Is(err, pggate.ErrKeyReused) || !strings.Contains(err.Error(), c.code) || !strings.Contains(err.Error(), "key "+c.id) {
			t.Errorf("%s: %v, want ErrKeyReused %s", c.name, err, c.code)
		}
	}
	// Nothing refused was written, and the history holds grant's digests.
	hist, err := pggate.KeyHistory(ctx, w.db)
	if err != nil {
		t.Fatal(err)
	}
	want := []pggate.KeyUse{
		{ID: "k-a", Digest: hmacKey(t, "k-a", macSecret("k-a")).SecretDigest(), State: grant.KeyVerifyOnly},
		{ID: "k-b", Digest: hmacKey(t, "k-b", macSecret("k-b")).SecretDigest(), State: grant.KeyRetired},
		{ID: "k-c", Digest: hmacKey(t, "k-c", macSecret("k-c")).SecretDigest(), State: "dropped"},
		{ID: "k-d", Digest: hmacKey(t, "k-d", macSecret("k-d")).SecretDigest(), State: "dropped"},
		{ID: "k-e", Digest: hmacKey(t, "k-e", macSecret("k-d")).SecretDigest(), State: grant.KeyActive},
	}
	if fmt.Sprint(hist) != fmt.Sprint(want) {
		t.Fatalf("history\n%v\nwant\n%v", hist, want)
	}
	var n int
	if err := w.db.QueryRowContext(ctx, `SELECT count(*) FROM fencegate.keys WHERE key_id IN ('k-c', 'k-d') OR (key_id = 'k-a' AND state <> 'verify-only')`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("a refused enrolment changed fencegate.keys: %d rows, %v", n, err)
	}
	// TRUNCATE drops every key it removes.
	if _, err := w.db.ExecContext(ctx, `TRUNCATE fencegate.keys`); err != nil {
		t.Fatal(err)
	}
	if err := enroll("k-a", macSecret("k-a"), grant.KeyRetired); !errors.Is(err, pggate.ErrKeyReused) || !strings.Contains(err.Error(), "KEY_DROPPED") {
		t.Fatalf("k-a after TRUNCATE: %v", err)
	}
}

// TestRetiredKeyResurrectionRefused is issue 43 at the database: gk-1
// retired, gk-2 active; gk-1's row removed; gk-1 enrolled again, active,
// with another secret. Refused, so a grant MACed under the new secret
// stays BAD_PROOF. Negative control: without the trigger, the
// resurrected key is enrolled and its grant accepted.
func TestRetiredKeyResurrectionRefused(t *testing.T) {
	for _, trigger := range []bool{true, false} {
		w := newWorld(t)
		ctx := context.Background()
		if !trigger {
			if _, err := w.db.ExecContext(ctx, `DROP TRIGGER keys_history ON fencegate.keys`); err != nil {
				t.Fatal(err)
			}
		}
		for _, k := range []pggate.Key{
			{ID: "gk-1", Secret: macSecret("gk-1"), MinEpoch: 1, State: grant.KeyRetired},
			{ID: "gk-2", Secret: macSecret("gk-2"), MinEpoch: 1, State: grant.KeyActive},
		} {
			if err := pggate.SetKey(ctx, w.db, k); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := w.db.ExecContext(ctx, `DELETE FROM fencegate.keys WHERE key_id = 'gk-1'`); err != nil {
			t.Fatal(err)
		}
		err := pggate.SetKey(ctx, w.db, pggate.Key{ID: "gk-1", Secret: otherSecret("gk-1"), MinEpoch: 1, State: grant.KeyActive})
		iss := &gatetest.Issuer{Key: hmacKey(t, "gk-1", otherSecret("gk-1")), Epoch: 1, Now: gatetest.T0, StatusValidFor: time.Minute}
		m := iss.Mutation(gatetest.Writer{Resource: "res/r", Owner: "worker-a", Lease: "l-1", OperationID: "op", Fence: 1}, 1, "p")
		_, werr := w.run(ctx, "worker-a", gatetest.T0, m, "p", nil)
		if !trigger {
			if err != nil || werr != nil {
				t.Fatalf("negative control: without the trigger the resurrection fails: enrol %v, write %v", err, werr)
			}
			continue
		}
		if !errors.Is(err, pggate.ErrKeyReused) || !strings.Contains(err.Error(), "KEY_OTHER_SECRET") {
			t.Fatalf("gk-1 back with another secret: %v", err)
		}
		if !errors.Is(werr, gate.ErrBadProof) {
			t.Fatalf("a grant under the resurrected gk-1: %v, want BAD_PROOF", werr)
		}
	}
}

func TestKeySecretDigestIsGrants(t *testing.T) {
	w := newWorld(t)
	for _, secret := range [][]byte{macSecret("a"), append(macSecret("b"), 0, 1, 2, 0), make([]byte, 64)} {
		var got string
		if err := w.db.QueryRowContext(context.Background(), `SELECT fencegate.key_secret_digest($1)`, secret).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if want := hmacKey(t, "k", secret).SecretDigest(); got != want {
			t.Fatalf("digest %s, grant's %s", got, want)
		}
	}
}

// TestUpgradeToKeyHistoryEqualsFreshInstall: keys enrolled at version 4
// (retired, verify-only, active), then the upgrade: the history records
// them, the retired key cannot come back, and the catalog and history
// equal those of a fresh install that enrolled the same keys.
func TestUpgradeToKeyHistoryEqualsFreshInstall(t *testing.T) {
	ctx := context.Background()
	keys := []pggate.Key{
		{ID: "up-1", Secret: macSecret("up-1"), MinEpoch: 1, State: grant.KeyRetired},
		{ID: "up-2", Secret: macSecret("up-2"), MinEpoch: 1, State: grant.KeyVerifyOnly},
		{ID: "up-3", Secret: macSecret("up-3"), MinEpoch: 2, State: grant.KeyActive},
	}
	old := newReleasedDB(t, 4)
	for _, k := range keys {
		if err := pggate.SetKey(ctx, old, k); err != nil {
			t.Fatal(err)
		}
	}
	in, err := pggate.Install(ctx, old)
	if err != nil || in.From != 4 || in.To != pggate.SchemaVersion() {
		t.Fatalf("upgrade: %+v %v", in, err)
	}
	if err := pggate.SetKey(ctx, old, pggate.Key{ID: "up-1", Secret: macSecret("up-1"), MinEpoch: 1, State: grant.KeyActive}); !errors.Is(err, pggate.ErrKeyReused) {
		t.Fatalf("a key retired before the upgrade made active after it: %v", err)
	}

	fresh := newWorld(t).db
	for _, k := range keys {
		if err := pggate.SetKey(ctx, fresh, k); err != nil {
			t.Fatal(err)
		}
	}
	hOld, err1 := pggate.KeyHistory(ctx, old)
	hFresh, err2 := pggate.KeyHistory(ctx, fresh)
	if err1 != nil || err2 != nil || len(hOld) != len(keys) || fmt.Sprint(hOld) != fmt.Sprint(hFresh) {
		t.Fatalf("history after the upgrade\n%v (%v)\nafter a fresh install\n%v (%v)", hOld, err1, hFresh, err2)
	}
	sameGate(t, gateCatalog(t, old), "upgraded from version 4", gateCatalog(t, fresh))
}
