// Proves the fence assertions of grantLease can fire: a fence not above
// max(highestFence, floor), and a record that does not hold the fence it
// granted, each panic with an assertion failure, and the records
// grantLease itself leaves pass.
package lockstate

import (
	"testing"

	"github.com/fencegate/fencegate/internal/assert"
)

func TestFenceAssertionsFire(t *testing.T) {
	holder := func(fence uint64) *Holder { return &Holder{Grant: GrantBody{FenceToken: fence}} }
	for name, broken := range map[string]func(){
		"fence equal to the bound":          func() { assertFenceAbove("r", 7, 7) },
		"fence below the bound":             func() { assertFenceAbove("r", 6, 7) },
		"record keeps the old highestFence": func() { assertGranted("r", &Record{HighestFence: 7, Holder: holder(8)}, 7) },
		"granted at the floor":              func() { assertGranted("r", &Record{HighestFence: 9, Floor: 9, Holder: holder(9)}, 8) },
	} {
		if assert.Catch(broken) == nil {
			t.Errorf("%s: no assertion failure", name)
		}
	}

	next := &Record{HighestFence: 4, Floor: 10}
	body, _, err := grantLease(next, "r", Settings{}, Waiter{Owner: "w", RequestID: "q", TTLMs: 1000}, -1, t0, testLimits())
	if err != nil || body.FenceToken != 11 || next.HighestFence != 11 {
		t.Fatalf("grantLease above a floor: fence %d, highest %d, %v", body.FenceToken, next.HighestFence, err)
	}
}
