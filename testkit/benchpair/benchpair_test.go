package benchpair_test

import (
	"testing"
	"time"

	"github.com/fencegate/fencegate/testkit/benchpair"
)

func TestMedian(t *testing.T) {
	ds := []time.Duration{5, 1, 3, 4, 2}
	if m := benchpair.Median(ds); m != 3 {
		t.Fatalf("median %v, want 3", m)
	}
	if ds[0] != 5 {
		t.Fatalf("Median reordered its argument: %v", ds)
	}
	if m := benchpair.Median([]time.Duration{2, 1}); m != 2 {
		t.Fatalf("median of two %v, want the upper", m)
	}
}

// TestRunRotates: iteration i starts with lane i mod n and does every
// lane once.
func TestRunRotates(t *testing.T) {
	var order []string
	res := testing.Benchmark(func(b *testing.B) {
		order = order[:0]
		lane := func(name string) benchpair.Lane {
			return benchpair.Lane{Name: name, Write: func(int) error { order = append(order, name); return nil }}
		}
		benchpair.Run(b, lane("a"), lane("b"), lane("c"))
	})
	if res.N < 1 {
		t.Fatal("the benchmark did not run")
	}
	for i := 0; i+3 <= len(order) && i < 9; i += 3 {
		want := []string{"a", "b", "c", "a", "b"}[(i/3)%3:][:3]
		if got := order[i : i+3]; got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
			t.Fatalf("iteration %d ran %v, want %v", i/3, got, want)
		}
	}
	if _, ok := res.Extra["c/a"]; !ok {
		t.Fatalf("no c/a ratio among %v", res.Extra)
	}
}
