// This file proves that the fast path (fast.go) decides exactly as the
// read-and-decide path: a warm Run stores with one statement while the
// database holds the state it cached, and where the state moved under it
// (another gate on the same database, an operator action) the statement
// stores nothing and the write is decided on a fresh read. The negative
// control loosens the statement's compare (it forgets the minimum policy
// generation) and shows the same test failing: a write below the raised
// minimum is accepted.
package sqlgate_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/sqlgate"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

// fastWays are the ways a write reaches the fast statement: SQLite's
// Run, PostgreSQL's Run through database/sql (pgx's driver, and a driver
// hiding it) and RunPgx.
var fastWays = append([]string{"sqlite"}, vias...)

// fastEnv is a gate on dialect d (SQLite's or PostgreSQL's, as way says)
// applying as way says, and a second gate on the same database: another
// process, whose writes the first one's cache does not see.
func fastEnv(t *testing.T, d *sqlgate.Dialect, way string) (e *specE, other *sqlgate.Gate, iss *gatetest.Issuer) {
	if way == "sqlite" {
		b := sqliteBackend
		b.dialect = d
		env := newEnv(t, b, nil)
		e, iss = &specE{env: env}, env.iss
	} else {
		iss0 := gatetest.NewIssuer("main")
		e, iss = specEnv(t, d, &stepClock{ts: []time.Time{iss0.Now.Add(time.Second)}}, way)
	}
	base := sqlgate.SQLite
	if way != "sqlite" {
		base = sqlgate.Postgres
	}
	other, err := sqlgate.New(sqlgate.Config{Dialect: base, Policy: gate.Policy{Verifier: iss.Verifier}, Clock: fixedClock{iss.Now.Add(time.Second)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Migrate(e.ctx, e.db); err != nil {
		t.Fatal(err)
	}
	return e, other, iss
}

func TestFastPathStoresOnlyOnTheStoredState(t *testing.T) {
	for _, way := range fastWays {
		t.Run(way, func(t *testing.T) {
			for _, loose := range []bool{false, true} {
				t.Run(map[bool]string{false: "statement", true: "loosened-statement"}[loose], func(t *testing.T) {
					d := map[bool]*sqlgate.Dialect{true: sqlgate.SQLite, false: sqlgate.Postgres}[way == "sqlite"]
					if loose { // forget the minimum policy generation
						if way == "sqlite" {
							d = sqlgate.BreakFast(d, "r.min_policy_generation = $16", "$16 = $16")
						} else {
							d = sqlgate.BreakFast(d, "s.min_policy_generation = $16", "$16::bigint >= 0")
						}
					}
					err := fastStoresOnlyOnTheStoredState(t, d, way)
					switch {
					case !loose && err != nil:
						t.Fatal(err)
					case loose && err == nil:
						t.Fatal("negative control: the loosened fast statement passed the test")
					case loose:
						t.Logf("negative control caught: %v", err)
					}
				})
			}
		})
	}
}

// fastStoresOnlyOnTheStoredState writes segments of one operation through
// the fast path, moves the state with another gate and with an operator
// action, and returns what went wrong: an outcome the read-and-decide path
// would not give, or a fast path not taken where the cache is current.
func fastStoresOnlyOnTheStoredState(t *testing.T, d *sqlgate.Dialect, way string) error {
	e, other, iss := fastEnv(t, d, way)
	const r = "fast/r"
	seg := func(seq uint64) *gate.Mutation { return iss.Mutation(wr(r, 5, "op-a"), seq, fmt.Sprint("p", seq)) }
	for seq := uint64(1); seq <= 4; seq++ {
		if _, err := e.apply(owner, seg(seq), "p"); err != nil {
			t.Fatalf("segment %d: %v", seq, err)
		}
	}
	if stored, missed := e.g.FastCounts(); stored != 3 || missed != 0 {
		t.Fatalf("warm writes: %d stored fast, %d missed; want 3 and 0 (the first write reads)", stored, missed)
	}
	// Another gate accepts segment 5: this gate's cache is now behind,
	// and decides on it that its own segment 5 (another payload) is the
	// next: the fast statement finds the state moved and stores nothing,
	// and the fresh read finds the other gate's receipt.
	if _, err := other.Run(e.ctx, e.db, owner, seg(5), write(seg(5), "p")); err != nil {
		t.Fatalf("segment 5 by the other gate: %v", err)
	}
	if _, err := e.apply(owner, iss.Mutation(wr(r, 5, "op-a"), 5, "another payload"), "p"); !errors.Is(err, gate.ErrQuarantined) {
		return fmt.Errorf("segment 5 with another payload after the other gate's: %v, want QUARANTINED", err)
	}
	if stored, missed := e.g.FastCounts(); stored != 3 || missed != 1 {
		t.Fatalf("after the other gate's write: %d stored fast, %d missed; want 3 and 1", stored, missed)
	}
	if _, err := e.apply(owner, seg(6), "p"); err != nil {
		t.Fatalf("segment 6: %v", err)
	}
	if _, err := e.apply(owner, seg(5), "p"); !errors.Is(err, gate.ErrReplayed) {
		t.Fatalf("segment 5 again: %v, want REPLAYED", err)
	}
	if _, err := e.apply(owner, seg(7), "p"); err != nil {
		t.Fatalf("segment 7: %v", err)
	}
	if stored, missed := e.g.FastCounts(); stored != 5 || missed != 1 {
		t.Fatalf("segments 6 and 7: %d stored fast, %d missed; want 5 and 1 (the fresh read refilled the cache)", stored, missed)
	}
	// An operator raises the minimum policy generation above the grant's
	// through the other gate: the cache still holds the old minimum.
	if err := other.SetMinPolicyGeneration(e.ctx, e.db, r, 1000, "ops"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.apply(owner, seg(8), "p"); !errors.Is(err, gate.ErrPolicyStale) {
		return fmt.Errorf("segment 8 below the raised minimum policy generation: %v, want POLICY_STALE", err)
	}
	if n := e.count(`SELECT count(*) FROM fencegate_receipts WHERE resource = $1`, r); n != 7 {
		return fmt.Errorf("%d receipts, want 7", n)
	}
	if n := e.count(`SELECT count(*) FROM ledger WHERE resource = $1`, r); n != 7 {
		return fmt.Errorf("%d ledger rows, want 7", n)
	}
	if st := e.state(r); st.HighestFence != 5 || st.LastSegmentSeq != 7 {
		return fmt.Errorf("state fence %d segment %d, want 5 and 7", st.HighestFence, st.LastSegmentSeq)
	}
	return nil
}

// coldGate is a gate of dialect d on e's database, policy and clock that
// keeps no state (every write reads first): the cold lane of the
// WriteFloor benchmarks.
func coldGate(t testing.TB, e *env, d *sqlgate.Dialect) *sqlgate.Gate {
	g, err := sqlgate.New(sqlgate.Config{Dialect: d, Policy: gate.Policy{Verifier: e.iss.Verifier}, Clock: e.clock, CachedStatesMax: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Migrate(e.ctx, e.db); err != nil {
		t.Fatal(err)
	}
	return g
}
