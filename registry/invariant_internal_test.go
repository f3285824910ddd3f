// Proves the fence assertions of grantLease can fire: a fence not above
// max(highestFence, floor), and a record that does not hold the fence it
// granted, each panic with an assertion failure, and the records
// grantLease itself leaves pass.
package registry

import (
	"testing"

	"github.com/fencegate/fencegate/internal/assert"
)

// mustFail runs f and fails t unless it panics with an assertion failure.
func mustFail(t *testing.T, name string, f func()) {
	t.Helper()
	defer func() {
		if _, ok := recover().(assert.Failure); !ok {
			t.Errorf("%s: no assertion failure", name)
		}
	}()
	f()
}

func TestFenceAssertionsFire(t *testing.T) {
	mustFail(t, "fence equal to the floor", func() { assertFenceAbove("r", 7, 7) })
	mustFail(t, "fence below highestFence", func() { assertFenceAbove("r", 6, 7) })
	holder := func(fence uint64) *Holder { return &Holder{Grant: GrantBody{FenceToken: fence}} }
	mustFail(t, "record keeps the old highestFence", func() {
		assertGranted("r", &Record{HighestFence: 7, Holder: holder(8)}, 7)
	})
	mustFail(t, "granted at the floor", func() {
		assertGranted("r", &Record{HighestFence: 9, Floor: 9, Holder: holder(9)}, 8)
	})

	next := &Record{HighestFence: 4, Floor: 10}
	body, _, err := grantLease(next, nil, "r", Waiter{Owner: "w", RequestID: "q", TTLMs: 1000}, -1, t0, 1)
	if err != nil || body.FenceToken != 11 || next.HighestFence != 11 {
		t.Fatalf("grantLease above a floor: fence %d, highest %d, %v", body.FenceToken, next.HighestFence, err)
	}
}
