// This file proves the parsed-message cache bounded and that it keeps
// only messages that parsed.
package gate

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"testing"

	"github.com/fencegate/fencegate/grant"
)

func TestParsedCacheBoundedAndKeepsOnlyParses(t *testing.T) {
	const entriesMax = 8
	c := newParsedCache[string](entriesMax)
	calls := 0
	parse := func(b []byte) (*string, error) {
		calls++
		if string(b) == "bad" {
			return nil, errors.New("does not parse")
		}
		s := string(b)
		return &s, nil
	}
	get := func(s string) (*string, error) {
		return c.parse(grant.Digest(sha256.Sum256([]byte(s))), []byte(s), parse)
	}
	for i := range 5 * entriesMax {
		if v, err := get(fmt.Sprint(i)); err != nil || *v != fmt.Sprint(i) {
			t.Fatalf("%d: %v %v", i, v, err)
		}
		if n := c.c.Len(); n > entriesMax {
			t.Fatalf("%d entries, bound %d", n, entriesMax)
		}
	}
	calls = 0
	get("last")
	get("last")
	if calls != 1 {
		t.Fatalf("a repeated message was parsed %d times", calls)
	}
	for range 2 {
		if _, err := get("bad"); err == nil {
			t.Fatal("a failed parse came back as a success")
		}
	}
	if calls != 3 {
		t.Fatalf("a failed parse was cached: %d parses", calls)
	}
}
