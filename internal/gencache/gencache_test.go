// This file proves the cache's bound, its promotion of old entries, and
// that a disabled cache remembers nothing.
package gencache

import "testing"

func TestBoundedWithPromotion(t *testing.T) {
	c := New[int, int](8)
	for i := range 100 {
		c.Add(i, i)
		if n := c.Len(); n > 8 {
			t.Fatalf("%d entries, bound 8", n)
		}
	}
	if _, ok := c.Get(99); !ok {
		t.Fatal("the newest entry is gone")
	}
	c.Add(1000, 1)
	c.Add(1001, 1)
	c.Add(1002, 1) // 1000..1002 and 99's generation: 99 now old
	if v, ok := c.Get(99); !ok || v != 99 {
		t.Fatal("an old-generation hit must be found and promoted")
	}
	for i := 2000; i < 2003; i++ {
		c.Add(i, i)
	}
	if _, ok := c.Get(99); !ok {
		t.Fatal("a promoted entry must survive the next rotation")
	}
	var nilCache *Cache[int, int]
	nilCache.Add(1, 1)
	if _, ok := nilCache.Get(1); ok || New[int, int](0).Len() != 0 {
		t.Fatal("a nil or zero-size cache must cache nothing")
	}
}
