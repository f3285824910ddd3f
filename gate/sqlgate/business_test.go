// This file proves a failing business function leaves the transaction as
// it was before Apply: its own half-done writes undone, and no receipt,
// no fence change, nothing of the gate's written.
package sqlgate_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/sqlgate"
)

func testBusinessFailure(t *testing.T, b backend) {
	e := newEnv(t, b, nil)
	const r = "biz/one"
	boom := errors.New("boom")
	halfway := func(m *gate.Mutation) sqlgate.BusinessFunc {
		return func(ctx context.Context, tx *sql.Tx) error {
			if err := write(m, "half")(ctx, tx); err != nil {
				return err
			}
			return boom
		}
	}
	m := e.iss.Mutation(wr(r, 5, "op-a"), 1, "p")
	if _, err := e.g.Run(e.ctx, e.db, owner, m, halfway(m)); !errors.Is(err, boom) || !errors.Is(err, sqlgate.ErrBusiness) {
		t.Fatalf("got %v", err)
	}
	// In the caller's own transaction, which it then commits: the savepoint
	// must have removed the half-done write and written no receipt.
	tx, err := e.db.BeginTx(e.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.g.Apply(e.ctx, tx, owner, m, halfway(m)); !errors.Is(err, boom) {
		t.Fatalf("got %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := e.count(`SELECT count(*) FROM ledger`); n != 0 {
		t.Fatalf("ledger has %d rows", n)
	}
	if n := e.count(`SELECT count(*) FROM fencegate_receipts`); n != 0 {
		t.Fatalf("receipts: %d", n)
	}
	if st := e.state(r); st.HighestFence != 0 || st.LastSegmentSeq != 0 {
		t.Fatalf("fence moved: %+v", st)
	}
	if _, err := e.apply(owner, m, "p"); err != nil {
		t.Fatalf("the same mutation must still be acceptable: %v", err)
	}
}
