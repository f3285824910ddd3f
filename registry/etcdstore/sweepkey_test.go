package etcdstore

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/lockstate"
)

// The sweep keys are built by hand (no fmt on the commit path); they must
// be byte for byte the keys fmt built, which stores already hold.
func TestSweepKeyIsTheFormattedKey(t *testing.T) {
	s := &Store{prefix: "/fencegate/"}
	r := rand.New(rand.NewPCG(1, 2))
	ats := []int64{0, -1, 1, 15, 16, math.MaxInt64, math.MinInt64, 1_765_000_000_000}
	for range 1000 {
		ats = append(ats, r.Int64(), -r.Int64())
	}
	for _, at := range ats {
		want := fmt.Sprintf("%s%s%016x/", s.prefix, sweepDir, max(at, 0))
		if got := s.sweepPrefix(at); got != want {
			t.Fatalf("sweepPrefix(%d) = %q, want %q", at, got, want)
		}
		it := registry.SweepItem{AtMs: at, Key: lockstate.RequestKey{Owner: "o", RequestID: "r-1"}}
		if got, want := s.sweepKey(it), want+"o#r-1"; got != want {
			t.Fatalf("sweepKey(%d) = %q, want %q", at, got, want)
		}
	}
}
