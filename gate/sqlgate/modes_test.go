// This file proves the modes: shadow lets a rejected write through and
// logs it, enforce rejects it, and a resource goes shadow → enforce and
// never back.
package sqlgate_test

import (
	"errors"
	"testing"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
)

func testModes(t *testing.T, b backend) {
	e := newEnv(t, b, nil)
	const r = "mode/one"
	if err := e.g.SetMode(e.ctx, e.db, r, gate.ModeShadow, "ops"); err != nil {
		t.Fatal(err)
	}
	if err := e.g.Protect(e.ctx, e.db, "ledger", gate.ModeShadow, "ops"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.apply(owner, e.iss.Mutation(wr(r, 5, "op-a"), 1, "p"), "p"); err != nil {
		t.Fatal(err)
	}
	stale := e.iss.WithStatus(e.iss.Mutation(wr(r, 4, "op-old"), 1, "p"), grant.StateExpired)
	rc, err := e.apply(owner, stale, "stale")
	if err != nil || rc.Outcome != gate.StaleOwner || rc.Mode != gate.ModeShadow {
		t.Fatalf("shadow must let it through and say STALE_OWNER: %+v %v", rc, err)
	}
	if n := e.count(`SELECT count(*) FROM ledger WHERE payload = 'stale'`); n != 1 {
		t.Fatal("shadow: business change must proceed")
	}
	if n := e.count(`SELECT count(*) FROM fencegate_receipts WHERE resource = $1`, r); n != 1 {
		t.Fatalf("shadow rejection stored a receipt: %d receipts", n)
	}
	logs, err := e.g.Records(e.ctx, e.db, "shadow_log", r)
	if err != nil || len(logs) != 1 || logs[0].Kind != string(gate.StaleOwner) {
		t.Fatalf("shadow log %+v %v", logs, err)
	}
	if st := e.state(r); st.HighestFence != 5 {
		t.Fatalf("shadow rejection moved the fence: %+v", st)
	}
	if c, err := e.g.Coverage(e.ctx, e.db); err != nil || c.Gated != 1 || c.Ungated != 1 {
		t.Fatalf("the shadow-rejected write must count as ungated: %+v %v", c, err)
	}
	if err := e.g.SetMode(e.ctx, e.db, r, gate.ModeEnforce, "ops"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.apply(owner, stale, "stale"); !errors.Is(err, gate.ErrStaleOwner) {
		t.Fatalf("enforce: %v", err)
	}
	if err := e.g.SetMode(e.ctx, e.db, r, gate.ModeShadow, "ops"); !errors.Is(err, gate.ErrModeDowngrade) {
		t.Fatalf("enforce → shadow: %v", err)
	}
	if err := e.g.SetMode(e.ctx, e.db, r, "off", "ops"); !errors.Is(err, gate.ErrModeDowngrade) {
		t.Fatalf("enforce → off: %v", err)
	}
}
