// This file proves the request layout with the SDK's request IDs, which
// all start "req-": they spread over the owner's buckets (at most
// Buckets), and a scan paging through them returns every entry once, in
// key order, while entries are added and deleted between its pages.
package zkstore

import (
	"context"
	"fmt"
	"testing"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
)

func scanEntry(k lockstate.RequestKey) *lockstate.RequestEntry {
	return &lockstate.RequestEntry{Grant: lockstate.GrantBody{Resource: "x", Owner: k.Owner, RequestID: k.RequestID}, ParamsDigest: "p", State: grant.StateReleased}
}

func TestScanPagesThroughBuckets(t *testing.T) {
	s := freshStore(t)
	ctx := context.Background()
	const n, page = 300, 7
	key := func(i int) lockstate.RequestKey {
		return lockstate.RequestKey{Owner: "spiffe://ex.org/w", RequestID: fmt.Sprintf("req-%016x%016x", uint64(i)*0x9e3779b97f4a7c15, i)}
	}
	put := func(lo, hi int) {
		var ws []registry.RequestWrite
		for i := lo; i < hi; i++ {
			ws = append(ws, registry.RequestWrite{Key: key(i), Entry: scanEntry(key(i))})
		}
		if res, err := s.Commit(ctx, registry.Write{Requests: ws}); err != nil || !res.OK {
			t.Fatalf("put: %+v %v", res, err)
		}
	}
	for lo := 0; lo < n; lo += 50 {
		put(lo, lo+50)
	}
	buckets, _, err := s.c.Children(s.ownerPath(key(0).Owner))
	if err != nil || len(buckets) < Buckets/2 || len(buckets) > Buckets {
		t.Fatalf("%d entries in %d buckets (%v), want them spread over at most %d", n, len(buckets), err, Buckets)
	}
	seen, deleted := map[lockstate.RequestKey]bool{}, map[lockstate.RequestKey]bool{}
	var last lockstate.RequestKey
	for round := 0; ; round++ {
		got, err := s.ScanRequests(ctx, last, page)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			break
		}
		for _, sl := range got {
			if !last.Less(sl.Key) || seen[sl.Key] {
				t.Fatalf("page %d: %v after %v (seen before: %v)", round, sl.Key, last, seen[sl.Key])
			}
			seen[sl.Key], last = true, sl.Key
		}
		if round%5 == 0 { // the index changes between pages
			put(n+round, n+round+1)
			del := key(round)
			deleted[del] = true
			if res, err := s.Commit(ctx, registry.Write{Requests: []registry.RequestWrite{{Key: del}}}); err != nil || !res.OK {
				t.Fatalf("delete: %+v %v", res, err)
			}
		}
	}
	for i := 0; i < n; i++ {
		if !seen[key(i)] && !deleted[key(i)] {
			t.Fatalf("entry %d (%s) never scanned", i, key(i).RequestID)
		}
	}
}
