// This file proves a lock cycle writes each request entry once, at grant:
// an acquire puts the record and the new entry, a release puts the
// record alone, never the ended lease's entry again
// (lockstate/decide_test.go shows the same of a handoff, an expiry and a
// revocation, decision by decision). A negative control replays the old
// release, which wrote the entry again, and shows the count catch it.
package registry_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
	"github.com/fencegate/fencegate/registry/memstore"
	"github.com/fencegate/fencegate/testkit/fakeclock"
)

// putCount counts the puts of the commits a memstore's hook saw.
type putCount struct {
	records  int // record puts
	entries  int // request-entry puts
	rewrites int // puts over an entry that already existed
	live     map[lockstate.RequestKey]bool
}

func (p *putCount) hook(c *memstore.Committed) {
	if c.RecordWritten {
		p.records++
	}
	for _, k := range c.Requests {
		e, err := c.Request(k)
		switch {
		case err != nil:
			panic(err)
		case e == nil: // deleted
			delete(p.live, k)
		case p.live[k]:
			p.entries++
			p.rewrites++
		default:
			p.entries++
			p.live[k] = true
		}
	}
}

// cycles runs n acquire+release cycles on a store wrapped by wrap and
// counts the puts.
func cycles(t *testing.T, n int, wrap func(registry.Store) registry.Store) *putCount {
	t.Helper()
	ctx := context.Background()
	k, _ := testKey(t)
	mem := memstore.New()
	count := &putCount{live: map[lockstate.RequestKey]bool{}}
	mem.OnCommit(count.hook)
	clk := fakeclock.New(time.Date(2026, 7, 19, 10, 0, 0, 0, time.UTC))
	reg, err := registry.New(wrap(mem), registry.DefaultConfig(epoch), clk, k)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		is, err := reg.Acquire(ctx, "worker-a", req("puts/1", fmt.Sprint("c", i)))
		if err != nil {
			t.Fatal(err)
		}
		if err := reg.Release(ctx, "worker-a", "puts/1", is.Grant.Lease); err != nil {
			t.Fatal(err)
		}
	}
	return count
}

func TestCycleWritesEachEntryOnce(t *testing.T) {
	const n = 20
	got := cycles(t, n, func(s registry.Store) registry.Store { return s })
	if got.records != 2*n || got.entries != n || got.rewrites != 0 {
		t.Fatalf("%d cycles put %d records and %d entries (%d over an existing entry); want %d, %d and 0: three puts a cycle",
			n, got.records, got.entries, got.rewrites, 2*n, n)
	}
}

// TestCycleCountCatchesRewrites is the negative control: a store that,
// like the release before entries were written once, writes the ended
// lease's entry again in the releasing commit, is caught by the count.
func TestCycleCountCatchesRewrites(t *testing.T) {
	const n = 5
	got := cycles(t, n, func(s registry.Store) registry.Store { return &rewritingStore{Store: s} })
	if got.rewrites != n || got.entries != 2*n {
		t.Fatalf("the count missed the rewrites: %+v", got)
	}
}

// rewritingStore writes, in every commit that ends its resource's holder,
// the ended lease's entry again with its final state, as releases did.
type rewritingStore struct {
	registry.Store
}

func (s *rewritingStore) Commit(ctx context.Context, w registry.Write) (registry.CommitResult, error) {
	if w.Record != nil && w.RecordWas != nil && w.RecordWas.Holder != nil && w.Record.Holder == nil {
		h := w.RecordWas.Holder
		w.Requests = append(w.Requests, registry.RequestWrite{
			Key: lockstate.RequestKey{Owner: h.Grant.Owner, RequestID: h.Grant.RequestID},
			Entry: &lockstate.RequestEntry{Grant: h.Grant, ParamsDigest: h.ParamsDigest,
				State: grant.StateReleased, EndedAtMs: 1},
		})
	}
	return s.Store.Commit(ctx, w)
}
