// Proves the one-call write to a worker's own database (client.Apply over
// sqlgate.Local on SQLite, a real registry in process): segments number
// themselves and every answer is settled, so Release need not wait; a
// failed business change is returned as it is, with nothing written and
// nothing left to drain; and a lease whose lock was broken, still
// believing it holds, gets STALE_OWNER after the next holder wrote — the
// row keeps the next holder's value.
package client_test

import (
	"context"
	"database/sql"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/sqlgate"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/testkit/clienttest"
	"github.com/fencegate/fencegate/wire"
)

func TestApplyWritesSettlesAndFences(t *testing.T) {
	ctx := context.Background()
	reg, err := clienttest.NewRegistry(client.SystemClock{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	local, err := sqlgate.OpenLocal(ctx, filepath.Join(t.TempDir(), "own.db"), reg.Verifier)
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	if _, err := local.DB.ExecContext(ctx, "CREATE TABLE totals (batch TEXT PRIMARY KEY, total INT)"); err != nil {
		t.Fatal(err)
	}
	session := func(owner string, seed uint64) *client.Session {
		return client.NewSession(registry.Direct{Registry: reg.Registry, Owner: owner},
			client.Options{Rand: rand.New(rand.NewPCG(seed, seed)), Manual: true})
	}
	set := func(v int) func(context.Context, *sql.Tx) error {
		return func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, "INSERT OR REPLACE INTO totals VALUES ('b', ?)", v)
			return err
		}
	}
	a, err := session(clienttest.OwnerA, 1).Lock(ctx, wire.AcquireRequest{Resource: "totals/b"})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range []int{100, 110} {
		r, err := client.Apply(ctx, a, local, []byte{byte(v)}, set(v))
		if err != nil || r.SegmentSeq != uint64(i+1) {
			t.Fatalf("write %d: segment %d, %v", i+1, r.SegmentSeq, err)
		}
	}
	businessFailed := errors.New("the business change failed")
	if _, err := client.Apply(ctx, a, local, []byte("x"), func(context.Context, *sql.Tx) error { return businessFailed }); !errors.Is(err, businessFailed) || errors.Is(err, client.ErrOutcomeUnknown) {
		t.Fatalf("a failed business change: %v, want its own error, not an unknown outcome", err)
	}
	if n := a.Unsettled(); n != 0 {
		t.Fatalf("%d envelopes left unsettled: Release would wait for them", n)
	}

	// The lock is broken behind A's back (A's lease is manual: it renews
	// nothing and learns nothing); B takes it and writes.
	if _, err := reg.Break(ctx, "totals/b"); err != nil {
		t.Fatal(err)
	}
	b, err := session(clienttest.OwnerB, 2).Lock(ctx, wire.AcquireRequest{Resource: "totals/b"})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := client.Apply(ctx, b, local, []byte("200"), set(200)); err != nil || r.FenceToken <= a.Grant().FenceToken {
		t.Fatalf("B's write: fence %d, %v", r.FenceToken, err)
	}
	_, err = client.Apply(ctx, a, local, []byte("999"), set(999))
	if !errors.Is(err, gate.ErrStaleOwner) || a.Unsettled() != 0 {
		t.Fatalf("A's late write: %v (unsettled %d), want STALE_OWNER, settled", err, a.Unsettled())
	}
	var total int
	if err := local.DB.QueryRowContext(ctx, "SELECT total FROM totals WHERE batch = 'b'").Scan(&total); err != nil || total != 200 {
		t.Fatalf("the row holds %d (%v), want B's 200", total, err)
	}
}
