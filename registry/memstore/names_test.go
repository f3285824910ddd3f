package memstore

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestNamesScanIsTheSortedFilter: over 3,000 names inserted in random
// order (blocks split several times), every scan lists what filtering
// and sorting all names lists, and looks at no more than it lists and
// one more.
func TestNamesScanIsTheSortedFilter(t *testing.T) {
	rng := rand.New(rand.NewPCG(49, 1))
	var ns names
	var all []string
	for _, i := range rng.Perm(3000) {
		n := fmt.Sprintf("%c/%04d", 'a'+i%3, i)
		ns.insert(n)
		all = append(all, n)
	}
	slices.Sort(all)
	if len(ns.blocks) < 3000/namesBlockMax {
		t.Fatalf("%d blocks for 3,000 names", len(ns.blocks))
	}
	for range 500 {
		prefix := []string{"", "a/", "b/", "c/", "b/1", "z/"}[rng.IntN(6)]
		after := ""
		if rng.IntN(2) == 0 {
			after = all[rng.IntN(len(all))]
			if !strings.HasPrefix(after, prefix) {
				after = prefix
			}
		}
		limit := 1 + rng.IntN(200)
		var want []string
		for _, n := range all {
			if strings.HasPrefix(n, prefix) && n > after && len(want) < limit {
				want = append(want, n)
			}
		}
		var got []string
		looked := ns.scan(prefix, after, func(n string) bool {
			got = append(got, n)
			return len(got) < limit
		})
		if !slices.Equal(got, want) {
			t.Fatalf("scan %q after %q limit %d: %v, want %v", prefix, after, limit, got, want)
		}
		if looked > len(got)+1 {
			t.Fatalf("scan %q after %q limit %d looked at %d names to list %d", prefix, after, limit, looked, len(got))
		}
	}
	if re := namesOf(slices.Clone(all)); !slices.Equal(slices.Concat(re.blocks...), all) {
		t.Fatal("namesOf does not keep the names in order")
	}
}
