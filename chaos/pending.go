package chaos

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// The pending lost releases of a model state, as one comparable string
// ("l3-ab*2,l7-cd*1", sorted by lease): a release is pending from the
// operation recording its lost answer until it takes effect. Copies
// count, because a client retries a lost release and, after a restore,
// a lease released once may be its store's holder again, and be
// released again by a retry sent before the restore.

// pendingAdd adds one copy of lease's release.
func pendingAdd(pending, lease string) string {
	m := pendingParse(pending)
	m[lease]++
	return pendingFormat(m)
}

// pendingTake removes one copy of lease's release; false when none is
// pending (or lease is "").
func pendingTake(pending, lease string) (string, bool) {
	if lease == "" || pending == "" {
		return pending, false
	}
	m := pendingParse(pending)
	if m[lease] == 0 {
		return pending, false
	}
	if m[lease]--; m[lease] == 0 {
		delete(m, lease)
	}
	return pendingFormat(m), true
}

// pendingCap keeps at most capOf(lease) copies of each lease's release.
func pendingCap(pending string, capOf func(lease string) int) string {
	m := pendingParse(pending)
	changed := false
	for l, n := range m {
		if c := capOf(l); n > c {
			changed = true
			if c <= 0 {
				delete(m, l)
			} else {
				m[l] = c
			}
		}
	}
	if !changed {
		return pending
	}
	return pendingFormat(m)
}

func pendingParse(pending string) map[string]int {
	m := map[string]int{}
	if pending == "" {
		return m
	}
	for _, e := range strings.Split(pending, ",") {
		i := strings.LastIndexByte(e, '*')
		n, err := strconv.Atoi(e[i+1:])
		if i < 0 || err != nil {
			panic(fmt.Sprintf("chaos: pending releases %q", pending))
		}
		m[e[:i]] = n
	}
	return m
}

func pendingFormat(m map[string]int) string {
	leases := make([]string, 0, len(m))
	for l := range m {
		leases = append(leases, l)
	}
	sort.Strings(leases)
	var b strings.Builder
	for i, l := range leases {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s*%d", l, m[l])
	}
	return b.String()
}
