// This file proves that concurrent current and stale writers on one
// resource leave a business table equal to the accepted receipts, in
// fence order, and (negative control) that the same checker catches the
// stale write a lease-only direct write lets land.
package sqlgate_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/testkit/gatetest"
)

type ledgerRow struct {
	fence, seq uint64
	payload    string
}

// ledgerOf reads the business table for resource in commit order.
func (e *env) ledgerOf(resource string) []ledgerRow {
	rows, err := e.db.QueryContext(e.ctx, `SELECT fence, seq, payload FROM ledger WHERE resource = $1 ORDER BY id`, resource)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	var out []ledgerRow
	for rows.Next() {
		var r ledgerRow
		var f, s int64
		if err := rows.Scan(&f, &s, &r.payload); err != nil {
			e.t.Fatal(err)
		}
		r.fence, r.seq = uint64(f), uint64(s)
		out = append(out, r)
	}
	return out
}

// fenceOrderViolation returns a description of the first write that lands
// after a write under a higher fence, or out of segment order; "" if none.
func fenceOrderViolation(rows []ledgerRow) string {
	var fence, seq uint64
	for i, r := range rows {
		switch {
		case r.fence < fence:
			return fmt.Sprintf("row %d: fence %d landed after fence %d (stale write)", i, r.fence, fence)
		case r.fence > fence && r.seq != 1, r.fence == fence && r.seq != seq+1:
			return fmt.Sprintf("row %d: fence %d segment %d after fence %d segment %d", i, r.fence, r.seq, fence, seq)
		}
		fence, seq = r.fence, r.seq
	}
	return ""
}

func testNegativeControl(t *testing.T, b backend) {
	e := newEnv(t, b, nil)
	const r = "neg/one"
	a1 := e.iss.Mutation(wr(r, 1, "op-a"), 1, "a1")
	b1 := e.iss.Mutation(wr(r, 2, "op-b"), 1, "b1")
	a2 := e.iss.WithStatus(e.iss.Mutation(wr(r, 1, "op-a"), 2, "a2"), grant.StateExpired)
	// Lease-only: A still believes it holds the lock and writes directly.
	for _, m := range []*gate.Mutation{a1, b1, a2} {
		e.exec(`INSERT INTO ledger (resource, fence, seq, payload) VALUES ($1, $2, $3, $4)`, r, int64(m.FenceToken), int64(m.SegmentSeq), "x")
	}
	if v := fenceOrderViolation(e.ledgerOf(r)); v == "" {
		t.Fatal("negative control broken: the checker did not see the stale direct write")
	}
	const g = "neg/gated"
	for _, m := range []*gate.Mutation{a1, b1, a2} {
		m.Resource = g
	}
	a1, b1, a2 = e.iss.Mutation(wr(g, 1, "op-a"), 1, "a1"), e.iss.Mutation(wr(g, 2, "op-b"), 1, "b1"),
		e.iss.WithStatus(e.iss.Mutation(wr(g, 1, "op-a"), 2, "a2"), grant.StateExpired)
	for _, m := range []*gate.Mutation{a1, b1} {
		if _, err := e.apply(owner, m, "x"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.apply(owner, a2, "x"); !errors.Is(err, gate.ErrStaleOwner) {
		t.Fatalf("gated stale write: %v", err)
	}
	if v := fenceOrderViolation(e.ledgerOf(g)); v != "" {
		t.Fatal(v)
	}
}

// Concurrency workload size: writers × attempts each.
const (
	concurrentWriters     = 6
	concurrentAttemptsMax = 25
)

func testConcurrent(t *testing.T, b backend) {
	var current atomic.Uint64
	var fences sync.Map // grant digest → fence
	reg := &syncRegistry{current: &current, fences: &fences}
	e := newEnv(t, b, reg)
	const r = "conc/one"
	var wg sync.WaitGroup
	var mu sync.Mutex
	outcomes := map[gate.Outcome]int{}
	for w := range concurrentWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(42, uint64(w)))
			var fence, seq uint64
			for range concurrentAttemptsMax {
				if fence == 0 || rng.IntN(4) == 0 {
					fence, seq = current.Add(1), 0
				}
				seq++
				m := gatetest.WithoutStatus(e.iss.Mutation(wr(r, fence, fmt.Sprintf("op-%d", fence)), seq, ""))
				m.PayloadDigest = gatetest.Payload(fmt.Sprintf("%d/%d", fence, seq))
				g, _ := grant.ParseGrant(m.Grant)
				fences.Store(g.Digest(), fence)
				_, err := e.g.Run(e.ctx, e.db, owner, m, write(m, fmt.Sprintf("%d/%d", fence, seq)))
				o := gate.OutcomeOf(err)
				if o == "" || o == gate.FenceRegression {
					t.Errorf("writer %d fence %d seq %d: %v", w, fence, seq, err)
				}
				mu.Lock()
				outcomes[o]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	rows := e.ledgerOf(r)
	receipts, err := e.db.QueryContext(e.ctx, `SELECT fence, seq, payload_digest FROM fencegate_receipts WHERE resource = $1 ORDER BY fence, seq`, r)
	if err != nil {
		t.Fatal(err)
	}
	defer receipts.Close()
	i := 0
	for ; receipts.Next(); i++ {
		var f, s int64
		var pd []byte
		if err := receipts.Scan(&f, &s, &pd); err != nil {
			t.Fatal(err)
		}
		if i >= len(rows) || rows[i].fence != uint64(f) || rows[i].seq != uint64(s) || gatetest.Payload(rows[i].payload) != grant.Digest(pd) {
			t.Fatalf("receipt %d (%d/%d) has no matching business row", i, f, s)
		}
	}
	if i != len(rows) || outcomes[gate.Accepted] != len(rows) {
		t.Fatalf("%d receipts, %d business rows, %d accepted", i, len(rows), outcomes[gate.Accepted])
	}
	if v := fenceOrderViolation(rows); v != "" {
		t.Fatal(v)
	}
	if st := e.state(r); len(rows) > 0 && st.HighestFence != rows[len(rows)-1].fence {
		t.Fatalf("highestFence %d, last accepted %d", st.HighestFence, rows[len(rows)-1].fence)
	}
	if outcomes[gate.Accepted] == 0 || outcomes[gate.StaleOwner]+outcomes[gate.NotHeld] == 0 {
		t.Fatalf("workload did not interleave current and stale writers: %v", outcomes)
	}
	t.Logf("outcomes: %v", outcomes)
}

// syncRegistry is fakeRegistry safe for concurrent use.
type syncRegistry struct {
	current *atomic.Uint64
	fences  *sync.Map
}

func (s *syncRegistry) QueryStatus(_ context.Context, g *grant.Grant) (grant.State, uint64, error) {
	f, ok := s.fences.Load(g.Digest())
	if ok && f.(uint64) == s.current.Load() {
		return grant.StateHeld, gatetest.Epoch, nil
	}
	return grant.StateExpired, gatetest.Epoch, nil
}
